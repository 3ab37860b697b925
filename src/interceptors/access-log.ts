// One structured line per request when it ends. Calls the caller cancelled (HTTP/2 streams reset,
// connections closed before the answer) are logged as 499 / CANCELED, and at most
// CANCELED_LINES_PER_SECOND of them a second: a reset flood must not fill the disk. The lines left out
// are counted and reported as one "cancelled calls not logged" line per SUPPRESSED_REPORT_MS. Calls the
// server itself cut at the end of the shutdown grace are each logged, as 503 / UNAVAILABLE at level 40.
import { ErrorCode } from "../domain/errors.js";
import { shown } from "../domain/text-rules.js";
import type { HttpRequest, HttpResponse } from "../rest/envelope.js";
import type { CallLog } from "./call-log.js";
import { endedAs, wasAnswered } from "./call-signal.js";
import type { Logger } from "./logging.js";

export const CANCELED_LINES_PER_SECOND = 20;
const SUPPRESSED_REPORT_MS = 10_000;

export class AccessLog {
  private windowStart = 0;
  private linesInWindow = 0;
  private suppressed = 0;
  private report: NodeJS.Timeout | undefined;

  /**
   * The logger of the lines without an error. Their fields are the fixed ones below, none of them a
   * credential, so they skip the redaction pass (which cost more than the rest of the line); a line
   * with an error's cause keeps it.
   */
  private readonly plain: Logger;

  constructor(private readonly logger: Logger) {
    this.plain = logger.child({}, { redact: { paths: [] } });
  }

  write(req: HttpRequest, res: HttpResponse, log: CallLog, durationMs: number): void {
    const answered = wasAnswered(res);
    const { status, code } = endedAs(res, log);
    if (!answered && code === ErrorCode.CANCELED && !this.admitCanceled()) return;
    const line = {
      request_id: log.requestId,
      trace_id: log.trace?.traceId,
      parent_id: log.trace?.parentId,
      method: shown(req.method),
      path: shown((req.url ?? "").split("?")[0]),
      // 499 (nginx's "client closed request"): the caller went away before the answer was written.
      status,
      duration_ms: Math.round(durationMs * 100) / 100,
      procedure: log.procedure,
      enterprise_id: log.enterpriseId,
      code,
      // Rate limits count per address: a throttled call names its own, so it can be traced.
      client_address: log.code === ErrorCode.RATE_LIMITED ? log.clientAddress : undefined,
    };
    // A call the shutdown cut may have failed on its closed connection meanwhile: that is no fault of the server's.
    if (!answered && log.cutAtShutdown) this.logger.warn(line, "request cut at the end of the shutdown grace");
    else if (log.cause !== undefined) this.logger.error({ ...line, err: log.cause }, "request failed");
    else if (log.storeFault !== undefined) this.logger.warn({ ...line, store_fault: log.storeFault }, "store unavailable");
    else if (log.warning !== undefined) this.logger.warn({ ...line, ...log.warning.fields }, log.warning.message);
    else this.plain.info(line, "request");
  }

  /** Reports the lines left out so far, if any (at shutdown). */
  flush(): void {
    clearTimeout(this.report);
    this.report = undefined;
    if (this.suppressed === 0) return;
    this.logger.warn({ suppressed: this.suppressed, limit_per_second: CANCELED_LINES_PER_SECOND }, "cancelled calls not logged");
    this.suppressed = 0;
  }

  private admitCanceled(): boolean {
    const now = Date.now();
    if (now - this.windowStart >= 1_000) {
      this.windowStart = now;
      this.linesInWindow = 0;
    }
    if (this.linesInWindow < CANCELED_LINES_PER_SECOND) {
      this.linesInWindow++;
      return true;
    }
    this.suppressed++;
    if (!this.report) this.report = setTimeout(() => this.flush(), SUPPRESSED_REPORT_MS).unref();
    return false;
  }
}
