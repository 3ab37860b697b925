// GET /metrics on the service's own port: the Prometheus text exposition of its registry, open or
// behind a bearer token (METRICS, METRICS_TOKEN in config.ts). Off, the path is an unknown route.
import { createHash, timingSafeEqual } from "node:crypto";
import type { MetricsAccess } from "../config.js";
import { AppError, ErrorCode, invalidToken, methodNotAllowed } from "../domain/errors.js";
import { endWithBody } from "../http/compression.js";
import type { CallLog } from "../interceptors/call-log.js";
import { writeError, type HttpRequest, type HttpResponse } from "../rest/envelope.js";
import type { ServiceMetrics } from "./service-metrics.js";

export const METRICS_PATH = "/metrics";

export class MetricsEndpoint {
  /** SHA-256 of the token: digests of equal length compare in constant time, whatever the caller sends. */
  private readonly tokenDigest: Buffer | undefined;

  constructor(private readonly metrics: ServiceMetrics, private readonly access: MetricsAccess) {
    this.tokenDigest = access.mode === "token" ? digest(access.token) : undefined;
  }

  /** Answers a request to /metrics; false for any other path, and for every path when metrics are off. */
  handle(req: HttpRequest, res: HttpResponse, log: CallLog): boolean {
    if (this.access.mode === "off" || (req.url ?? "").split("?")[0] !== METRICS_PATH) return false;
    req.resume();
    if (req.method !== "GET") {
      this.fail(res, log, methodNotAllowed(req.method, METRICS_PATH, "GET"), { allow: "GET" });
      return true;
    }
    if (!this.admits(req.headers.authorization)) {
      this.fail(res, log, invalidToken("metrics token missing or wrong: send Authorization: Bearer <METRICS_TOKEN>"),
        { "www-authenticate": 'Bearer realm="metrics"' });
      return true;
    }
    this.metrics.registry.metrics().then((text) => {
      res.statusCode = 200;
      res.setHeader("content-type", this.metrics.registry.contentType);
      endWithBody(res, text);
    }, (error: unknown) => {
      log.cause = error;
      this.fail(res, log, new AppError(ErrorCode.INTERNAL, "internal error"));
    });
    return true;
  }

  private admits(authorization: string | undefined): boolean {
    if (!this.tokenDigest) return true;
    const given = /^Bearer +(\S+) *$/i.exec(authorization ?? "")?.[1];
    return given !== undefined && timingSafeEqual(digest(given), this.tokenDigest);
  }

  private fail(res: HttpResponse, log: CallLog, error: AppError, headers: Record<string, string> = {}): void {
    log.code = error.code;
    writeError(res, log.requestId, error, headers);
  }
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}
