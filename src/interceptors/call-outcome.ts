// The outermost interceptor of every business call, whatever its transport: names the procedure in
// the call's log, joins the call's deadline (call-signal.ts) with the transport's own signal, answers
// the deadline's error the moment it passes (or the moment work that held the event loop ends), and
// turns every failure into the caller's ConnectError: an AppError as it is, a store fault (busy, full, unreachable) as
// 503 with Retry-After (store-faults.ts), anything else as "internal error" with its cause kept for
// the log line only.
import { ConnectError, type ContextValues, type Interceptor } from "@connectrpc/connect";
import { AppError, ErrorCode } from "../domain/errors.js";
import type { StoreFault } from "../storage/store-faults.js";
import { callLogKey, procedureOf, type CallLog } from "./call-log.js";
import { callDeadlineKey, callSignalKey, throwIfPassed, untilAborted, type CallDeadline } from "./call-signal.js";
import { toConnectError } from "./connect-errors.js";
import { resolveRequestId } from "./request-id.js";
import { storeFaultError } from "./store-faults.js";

export class CallOutcome {
  /** `storeFaultOf`: the store fault an error is, if it is one (Database.faultOf): the caller may retry it. */
  constructor(private readonly storeFaultOf: (error: unknown) => StoreFault | undefined = () => undefined) {}

  readonly interceptor: Interceptor = (next) => async (req) => {
    const log = logOf(req.contextValues, req.header);
    log.procedure = procedureOf(req.method);
    // The transport's signal carries the caller's deadline; the call's own carries the server's timeout.
    // An in-process call's are one (call-chain.ts): AbortSignal.any costs every call.
    const callSignal = req.contextValues.get(callSignalKey);
    const signal = callSignal === req.signal ? callSignal : AbortSignal.any([req.signal, callSignal]);
    req.contextValues.set(callSignalKey, signal);
    const deadline = req.contextValues.get(callDeadlineKey);
    try {
      const res = await untilAborted(next(req), signal);
      throwIfPassed(deadline); // the signal's timer may not have had a turn (call-signal.ts)
      return res.stream ? { ...res, message: this.guarded(res.message, signal, deadline, log) } : res;
    } catch (error) {
      throw this.failure(error, log);
    }
  };

  /**
   * The caller's error for a failed call, recorded in its log. A ConnectError passes unchanged: it
   * is this step's own, or connect-es's answer to a malformed call.
   */
  failure(error: unknown, log: CallLog): ConnectError {
    if (error instanceof ConnectError) return error;
    if (error instanceof AppError) {
      log.code = error.code;
      log.warning = error.logWarning;
      return toConnectError(error, log.requestId);
    }
    const fault = this.storeFaultOf(error);
    if (fault) return toConnectError(storeFaultError(fault, log), log.requestId);
    log.code = ErrorCode.INTERNAL;
    log.cause = error;
    return toConnectError(new AppError(ErrorCode.INTERNAL, "internal error"), log.requestId);
  }

  /**
   * A stream's messages, each awaited under the call's deadline and through the same error mapping.
   * Ending the iteration early ends the handler's.
   */
  private async *guarded<T>(messages: AsyncIterable<T>, signal: AbortSignal, deadline: CallDeadline, log: CallLog): AsyncGenerator<T> {
    const iterator = messages[Symbol.asyncIterator]();
    let done = false;
    try {
      for (;;) {
        let next: IteratorResult<T>;
        try {
          next = await untilAborted(iterator.next(), signal);
          throwIfPassed(deadline);
        } catch (error) {
          throw this.failure(error, log);
        }
        if (next.done) {
          done = true;
          return;
        }
        yield next.value;
      }
    } finally {
      // Not awaited: a handler stopped mid-step finishes that step (it checks the call's signal) first.
      if (!done) iterator.return?.().catch(() => {});
    }
  }
}

/** The call's log: the transport's (app.ts sets one per request), or a new one for an in-memory call. */
function logOf(values: ContextValues, header: Headers): CallLog {
  let log = values.get(callLogKey);
  if (!log) {
    log = { requestId: resolveRequestId(header.get("x-request-id") ?? undefined) };
    values.set(callLogKey, log);
  }
  return log;
}
