// A busy, full or unreachable store (storage/store-faults.ts) as a caller sees it: 503 unavailable
// with Retry-After, never a server fault; what and where go to the call's log line only.
import { AppError, ErrorCode } from "../domain/errors.js";
import type { StoreFault } from "../storage/store-faults.js";
import type { CallLog } from "./call-log.js";

/** The Retry-After of a store fault, in seconds. */
const STORE_RETRY_AFTER_SECONDS = 1;

/** The caller's error for a store fault; the log gets the fault's own message (the store's location included). */
export function storeFaultError(fault: StoreFault, log: CallLog): AppError {
  log.code = ErrorCode.UNAVAILABLE;
  log.storeFault = fault.message;
  log.storeFaultKind = fault.kind;
  const message = { busy: "the store is busy", full: "the store is out of disk space", unreachable: "the store cannot be reached" }[fault.kind];
  return new AppError(ErrorCode.UNAVAILABLE, `${message}; retry later`, { "retry-after": String(STORE_RETRY_AFTER_SECONDS) });
}
