// createApp(deps) -> { handler, close }: the whole service as one node request handler, for HTTP/1.1
// and HTTP/2 alike. Never listens by itself (see server.ts).
import type { IncomingMessage } from "node:http";
import { Http2ServerResponse } from "node:http2";
import { performance } from "node:perf_hooks";
import { createContextValues } from "@connectrpc/connect";
import PQueue from "p-queue";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import { ConsoleAssets } from "./console-assets.js";
import { ErrorCode, methodNotAllowed, routeNotFound } from "./domain/errors.js";
import { COMPRESS_MIN_BYTES, endWithBody } from "./http/compression.js";
import { CorsPolicy } from "./http/cors.js";
import { AccessLog } from "./interceptors/access-log.js";
import { joinedAuthorization } from "./interceptors/auth.js";
import { recordCall, rpcTransportOf } from "./interceptors/call-metrics.js";
import { attachCallLog, callLogKey, callLogOf, type CallLog } from "./interceptors/call-log.js";
import { authorizingFirst } from "./interceptors/call-chain.js";
import { toConnectError } from "./interceptors/connect-errors.js";
import { notingProtocolRefusals } from "./interceptors/protocol-refusals.js";
import { answeredUnknownProcedure } from "./http/unknown-procedure.js";
import { addVary } from "./http/vary.js";
import { rpcAdapter } from "./http/rpc-adapter.js";
import { encodeGrpcMessageBySpec } from "./interceptors/grpc-message-encoding.js";
import { refuseForeignJson, refuseMalformedProtobuf } from "./interceptors/rpc-body-check.js";
import { attachCallSignal, cameWhileClosing, callDeadline, callDeadlineKey, callDeadlineOf, callerTimeoutMs, callSignalKey, callSignalOf, closeAfterAnswer, closeInStages, endIncompleteBodyAtDeadline, mayHaveBody, responseSignal } from "./interceptors/call-signal.js";
import type { Logger } from "./interceptors/logging.js";
import { RateLimits, type RateLimitSettings } from "./domain/rate-limits.js";
import type { ReportLimits } from "./domain/report-limits.js";
import { resolveRequestId } from "./interceptors/request-id.js";
import { parseTraceparent } from "./interceptors/trace-context.js";
import type { KeyProvider } from "./keys/key-provider.js";
import type { MetricsAccess } from "./config.js";
import { MetricsEndpoint } from "./metrics/metrics-endpoint.js";
import type { ServiceMetrics } from "./metrics/service-metrics.js";
import { writeError, type HttpRequest, type HttpResponse } from "./rest/envelope.js";
import { ConnectJsonUnary } from "./rest/connect-json-unary.js";
import { isRestPath, MAX_BODY_BYTES, RestFacade } from "./rest/rest-facade.js";
import { openApiJson } from "./openapi-document.js";
import { createBusiness, routes } from "./routes.js";
import { HealthState } from "./services/health-service.js";
import type { Database } from "./storage/database.js";

/** The request message compressions taken on Connect, gRPC and gRPC-Web (connect-es's own defaults, stated). */
const ACCEPTED_COMPRESSIONS = [compressionGzip, compressionBrotli];
/** Request messages decompressed at once: each may grow to the body limit, and 300 small bombs at once held 530 MB. */
const DECOMPRESSIONS_AT_ONCE = 4;

export interface AppDeps {
  database: Database;
  logger: Logger;
  /** Wraps the per-environment data keys that seal secrets. */
  keys: KeyProvider;
  rateLimits: RateLimitSettings;
  /** The longest a call may run when its caller sets no shorter deadline. */
  requestTimeoutMs: number;
  /** The running service's metrics (the store reports to them too: see main.ts). */
  metrics: ServiceMetrics;
  /** Who may read GET /metrics. */
  metricsAccess: MetricsAccess;
  /** Browser origins allowed to call the API (CORS); empty: CORS is off. */
  corsAllowedOrigins: readonly string[];
  /** What the usage reports may hold and how many run at once. */
  reportLimits: ReportLimits;
}

export interface App {
  handler: (req: HttpRequest, res: HttpResponse) => void;
  /** Requests started and not yet answered. */
  inFlight(): number;
  /** Marks the requests still unanswered as cut by the shutdown (see endedAs), before their connections are closed. */
  cutInFlight(): void;
  /**
   * Starts draining: health turns NOT_SERVING, open Watch streams end, and every HTTP/1.1 answer not
   * yet begun carries `Connection: close`.
   */
  beginShutdown(): void;
}

export function createApp({ database, logger, keys, rateLimits: rateLimitSettings, requestTimeoutMs, metrics, metricsAccess, corsAllowedOrigins, reportLimits }: AppDeps): App {
  const { services, chain, usage, reports } = createBusiness({ database, keys, rateLimits: new RateLimits(rateLimitSettings), ingested: metrics.ingested, reportLimits });
  metrics.watchIngestions(() => usage.ingestionCount());
  metrics.watchReports(() => reports.load());
  const health = new HealthState(services.map((s) => s.service.typeName));
  const rest = new RestFacade(services, chain);
  const connectJson = new ConnectJsonUnary(services, chain);
  const metricsEndpoint = new MetricsEndpoint(metrics, metricsAccess);
  /** The request paths of every RPC the adapter serves (reflection and health included). */
  const rpcPaths = new Set<string>();
  const decompression = { compressions: ACCEPTED_COMPRESSIONS, line: new PQueue({ concurrency: DECOMPRESSIONS_AT_ONCE }) };
  const rpc = rpcAdapter({
    routes: (router) => {
      routes(services, chain.interceptors, health)(router);
      // connect-es decodes RPC bodies and encodes grpc-message itself; these wrappers correct both.
      router.handlers.forEach((handler, i) => {
        const checked = refuseForeignJson(refuseMalformedProtobuf(handler, MAX_BODY_BYTES, decompression));
        router.handlers[i] = notingProtocolRefusals(encodeGrpcMessageBySpec(authorizingFirst(chain, checked, handler)));
        rpcPaths.add(handler.requestPath);
      });
    },
    readMaxBytes: MAX_BODY_BYTES,
    // The answer's messages are compressed past the same size as REST bodies.
    acceptCompression: ACCEPTED_COMPRESSIONS,
    compressMinBytes: COMPRESS_MIN_BYTES,
    // Unknown JSON fields are refused on Connect JSON as on REST: a misspelt field must not pass silently.
    jsonOptions: { useProtoFieldName: true, ignoreUnknownFields: false },
    contextValues: (req) => createContextValues().set(callLogKey, callLogOf(req)).set(callSignalKey, callSignalOf(req))
      .set(callDeadlineKey, callDeadlineOf(req)),
    fallback: (req, res) => {
      const log = callLogOf(req);
      log.code = ErrorCode.ROUTE_NOT_FOUND;
      const error = routeNotFound(req.method, (req.url ?? "").split("?")[0]!);
      if (!answeredUnknownProcedure(req, res as HttpResponse, toConnectError(error, log.requestId))) writeError(res as HttpResponse, log.requestId, error);
    },
    // Most often the caller, gone mid-answer: its access line says so (499, or the deadline's 5040). Otherwise a fault of the server's.
    answerFailed: (req, res, reason) => {
      const gone = res instanceof Http2ServerResponse ? res.stream.destroyed : res.destroyed;
      logger[gone ? "debug" : "error"]({ request_id: callLogOf(req).requestId, err: reason }, gone ? "answer cut: the caller left" : "answer failed");
    },
  });
  const consoleAssets = new ConsoleAssets();
  // Built from the services the REST facade routes, once.
  const openApi = openApiJson(services.map((s) => s.service));
  const cors = new CorsPolicy(corsAllowedOrigins, rest.router.list().map((route) => route.httpMethod));
  /** What a web app on another origin may call: every RPC, the REST routes and the API's description. */
  const isApiPath = (path: string) => rpcPaths.has(path) || isRestPath(path) || path === "/openapi.json";
  const accessLog = new AccessLog(logger);
  const inFlight = new Map<HttpResponse, CallLog>();
  let draining = false;

  const handler = (req: HttpRequest, res: HttpResponse) => {
    if (cameWhileClosing(req)) return void req.resume(); // after an answer that closed the connection: dropped, unlogged
    const started = performance.now();
    const requestId = resolveRequestId(req.headers["x-request-id"]);
    req.headers["x-request-id"] = requestId; // Connect handlers read the resolved id from here
    res.setHeader("x-request-id", requestId);
    const authorization = joinedAuthorization(req.rawHeaders);
    if (authorization !== undefined) req.headers.authorization = authorization; // every transport reads it from here
    const log: CallLog = { requestId, trace: parseTraceparent(req.headers.traceparent), clientAddress: req.socket?.remoteAddress };
    attachCallLog(req, log);
    // The call's deadline: the server's request timeout, or the caller's own when it is shorter.
    const deadline = callDeadline(Math.min(requestTimeoutMs, callerTimeoutMs(req) ?? requestTimeoutMs));
    const signal = responseSignal(req, res, deadline, log);
    attachCallSignal(req, signal, deadline);
    inFlight.set(res, log);
    if (draining) closeAfterAnswer(res);
    // HTTP/1.1: an answer begun before the request's body has all come closes the connection (RFC 9112 section 9.6): a client that
    // stops sending the body once answered (a body refused as too large) would have its next request read as the rest of this one.
    if (!(res instanceof Http2ServerResponse) && mayHaveBody(req)) {
      closeAfterAnswer(res);
      closeInStages(req as IncomingMessage);
      req.once("end", () => {
        if (!draining && !res.headersSent) res.removeHeader("connection");
      });
    }
    // Node never closes the response of a request pipelined behind an answer that closed the connection (a body refused unread): the
    // socket's close ends it too, else it stayed in flight, unlogged, for good.
    const socket = res instanceof Http2ServerResponse ? undefined : req.socket;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      socket?.off("close", end);
      inFlight.delete(res);
      const durationMs = performance.now() - started;
      accessLog.write(req, res, log, durationMs);
      recordCall(metrics, res, log, durationMs);
    };
    res.once("close", end);
    socket?.once("close", end);

    const path = (req.url ?? "/").split("?")[0]!;
    if (isApiPath(path) && cors.handle(req, res)) return;
    if ((path === "/healthz" || path === "/readyz" || path === "/openapi.json") && req.method !== "GET" && req.method !== "HEAD") {
      req.resume();
      log.code = ErrorCode.METHOD_NOT_ALLOWED;
      writeError(res, requestId, methodNotAllowed(req.method, path, "GET, HEAD"), { allow: "GET, HEAD" });
      return;
    }
    if (path === "/healthz") {
      res.statusCode = draining ? 503 : 200;
      res.setHeader("content-type", "application/json");
      res.end(draining ? '{"status":"draining"}' : '{"status":"ok"}');
      return;
    }
    // Readiness: /healthz's answer, and whether the store answers a query (a load balancer takes an instance whose store is down out).
    if (path === "/readyz") {
      void (draining ? Promise.resolve(false) : database.answers()).then((ready) => {
        res.statusCode = ready ? 200 : 503;
        res.setHeader("content-type", "application/json");
        res.end(ready ? '{"status":"ready"}' : `{"status":"${draining ? "draining" : "store unreachable"}"}`);
      });
      return;
    }
    // The API's description is public, like the health check: it holds no data.
    if (path === "/openapi.json") {
      res.setHeader("content-type", "application/json; charset=utf-8");
      endWithBody(res, openApi);
      return;
    }
    if (metricsEndpoint.handle(req, res, log) || consoleAssets.handle(req, res, log)) return;
    if (rest.handle(req, res, log, signal, deadline)) {
      log.transport = "rest";
      return;
    }
    if (connectJson.handle(req, res, log, signal, deadline)) {
      log.transport = "connect";
      return;
    }
    if (rpcPaths.has(path)) {
      // connect-es compresses a Connect answer by the request's Accept-Encoding and says nothing of it to caches.
      addVary(res, "Accept-Encoding");
      log.transport = rpcTransportOf(req);
      // Reflection and health run outside the call chain, which names the business procedures.
      log.procedure ??= path;
    }
    endIncompleteBodyAtDeadline(req, signal, log);
    rpc(req, res);
  };

  return {
    handler,
    inFlight: () => inFlight.size,
    cutInFlight() {
      for (const log of inFlight.values()) log.cutAtShutdown = true;
    },
    beginShutdown() {
      draining = true;
      health.setAllNotServing();
      for (const res of inFlight.keys()) closeAfterAnswer(res);
      accessLog.flush();
    },
  };
}
