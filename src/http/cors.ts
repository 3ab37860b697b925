// CORS for browser apps served from other origins (CORS_ALLOWED_ORIGINS). On, every preflight to an API
// path is answered here (204); an allowed origin's gets the methods and headers the API takes, and an
// answer to an allowed origin is marked readable by it, with the headers a client needs exposed. A
// disallowed origin gets no CORS header, so its browser keeps the answer from the page. Off (no origins),
// no CORS header is ever sent and OPTIONS is an ordinary method.
import { cors } from "@connectrpc/connect";
import type { HttpRequest, HttpResponse } from "../rest/envelope.js";
import { addVary } from "./vary.js";

/** How long a browser may keep a preflight's answer (Chromium's own cap). */
const PREFLIGHT_MAX_AGE_SECONDS = 7200;

/** Connect's and gRPC-Web's request headers (connect-es's list), plus the bearer token and tracing. */
const ALLOWED_HEADERS = [...cors.allowedHeaders, "Authorization", "X-Request-Id", "Traceparent", "Tracestate"].join(", ");

/** The Connect and gRPC(-Web) trailers and encodings (connect-es's list), plus what REST answers carry. */
const EXPOSED_HEADERS = [...cors.exposedHeaders, "X-Request-Id", "Retry-After", "Content-Disposition"].join(", ");

export class CorsPolicy {
  private readonly origins: ReadonlySet<string>;
  private readonly allowedMethods: string;

  /** `restMethods`: the HTTP methods of the REST routes, besides Connect's and gRPC-Web's POST and GET. */
  constructor(origins: readonly string[], restMethods: readonly string[]) {
    this.origins = new Set(origins);
    this.allowedMethods = [...new Set([...cors.allowedMethods, ...restMethods])].join(", ");
  }

  /**
   * Applies the policy to a request for an API path. True when it answered the request (a preflight,
   * while CORS is on); false when the request goes on, with the CORS headers set if its origin is allowed.
   */
  handle(req: HttpRequest, res: HttpResponse): boolean {
    if (this.origins.size === 0) return false;
    addVary(res, "Origin"); // the CORS headers depend on it: a shared cache must not serve one origin's to another
    const origin = req.headers.origin;
    const allowed = origin !== undefined && this.origins.has(origin);
    const preflight = req.method === "OPTIONS" && origin !== undefined && req.headers["access-control-request-method"] !== undefined;
    if (allowed) res.setHeader("access-control-allow-origin", origin);
    if (!preflight) {
      if (allowed) res.setHeader("access-control-expose-headers", EXPOSED_HEADERS);
      return false;
    }
    if (allowed) {
      res.setHeader("access-control-allow-methods", this.allowedMethods);
      res.setHeader("access-control-allow-headers", ALLOWED_HEADERS);
      res.setHeader("access-control-max-age", String(PREFLIGHT_MAX_AGE_SECONDS));
    }
    req.resume();
    res.statusCode = 204;
    res.end();
    return true;
  }
}
