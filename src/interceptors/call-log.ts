// What one request did, filled in as it runs and written as one structured log line when it ends.
import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import type { DescMethod } from "@bufbuild/protobuf";
import { createContextKey } from "@connectrpc/connect";
import type { TraceParent } from "./trace-context.js";
import type { LogWarning } from "../domain/errors.js";
import type { StoreFaultKind } from "../storage/store-faults.js";

/** The transport a call came by (contracts section 1). */
export type Transport = "grpc" | "grpc-web" | "connect" | "rest";

export interface CallLog {
  requestId: string;
  /** The caller's trace, from a valid `traceparent` header. */
  trace?: TraceParent;
  /** The peer's address (a proxy's, behind one); the token exchange is rate limited by it. */
  clientAddress?: string;
  procedure?: string;
  /** Set once the request is known to be a call of a served procedure's transport. */
  transport?: Transport;
  enterpriseId?: string;
  /** The ErrorCode number when the call failed. */
  code?: number;
  /** A server fault, kept for the log only; never sent to the caller. */
  cause?: unknown;
  /** A busy, full or unreachable store that failed the call (503): what and where, for the log only. */
  storeFault?: string;
  /** Its kind, for the metrics. */
  storeFaultKind?: StoreFaultKind;
  /** A refusal the server logs as a warning, with what only the log may say (AppError.logWarning). */
  warning?: LogWarning;
  /** Still unanswered at the end of the shutdown grace, when the server closed its connection. */
  cutAtShutdown?: boolean;
}

const key = Symbol("callLog");
type WithLog = (IncomingMessage | Http2ServerRequest) & { [key]?: CallLog };

export function attachCallLog(req: IncomingMessage | Http2ServerRequest, log: CallLog): void {
  (req as WithLog)[key] = log;
}

export function callLogOf(req: IncomingMessage | Http2ServerRequest): CallLog {
  return (req as WithLog)[key] ?? { requestId: "" };
}

/** Carries the request's CallLog into the call's interceptors and handlers (call-outcome.ts makes one when none is set). */
export const callLogKey = createContextKey<CallLog | undefined>(undefined, { description: "call log" });

/** A method's procedure as the log and the metrics name it: its RPC path. */
export const procedureOf = (method: DescMethod): string => `/${method.parent.typeName}/${method.name}`;
