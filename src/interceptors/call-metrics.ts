// A finished call as the metrics count it, taken from its CallLog when its response closes (app.ts,
// beside the access log): the one place calls are counted, whatever their transport.
import { ErrorCode } from "../domain/errors.js";
import type { CallOutcome, ServiceMetrics } from "../metrics/service-metrics.js";
import type { HttpRequest, HttpResponse } from "../rest/envelope.js";
import { isStoreError } from "../storage/store-faults.js";
import type { CallLog, Transport } from "./call-log.js";
import { endedAs } from "./call-signal.js";

/** The RPC transport of a request the Connect adapter serves, by its content type. */
export function rpcTransportOf(req: HttpRequest): Transport {
  const type = String(req.headers["content-type"] ?? "").toLowerCase();
  if (type.startsWith("application/grpc-web")) return "grpc-web";
  if (type.startsWith("application/grpc")) return "grpc";
  return "connect";
}

/** Counts the call; requests that reached no procedure (health checks, scrapes, unknown paths) are not calls. */
export function recordCall(metrics: ServiceMetrics, res: HttpResponse, log: CallLog, durationMs: number): void {
  const outcome = callOutcome(res, log, durationMs);
  if (outcome) metrics.call(outcome);
}

function callOutcome(res: HttpResponse, log: CallLog, durationMs: number): CallOutcome | undefined {
  if (log.procedure === undefined || log.transport === undefined) return undefined;
  const code = endedAs(res, log).code ?? ErrorCode.SUCCESS;
  const storeError = log.storeFaultKind ?? (log.cause !== undefined && isStoreError(log.cause) ? "error" : undefined);
  return { procedure: log.procedure, transport: log.transport, code, seconds: durationMs / 1000, storeError };
}
