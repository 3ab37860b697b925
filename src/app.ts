// createApp(deps) -> { handler, close }: the whole service as one node request handler, for HTTP/1.1
// and HTTP/2 alike. Never listens by itself (see server.ts).
import { performance } from "node:perf_hooks";
import { createContextValues } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { AppError, ErrorCode } from "./domain/errors.js";
import { Authenticator } from "./interceptors/auth.js";
import { attachCallLog, callLogKey, callLogOf, type CallLog } from "./interceptors/call-log.js";
import { CallPipeline } from "./interceptors/call-pipeline.js";
import type { Logger } from "./interceptors/logging.js";
import { resolveRequestId } from "./interceptors/request-id.js";
import type { KeyProvider } from "./keys/key-provider.js";
import { AccessAdmin } from "./operations/access-admin.js";
import { EnvironmentConfigs } from "./operations/environment-configs.js";
import { writeError, type HttpRequest, type HttpResponse } from "./rest/envelope.js";
import { ConnectJsonUnary } from "./rest/connect-json-unary.js";
import { MAX_BODY_BYTES, RestFacade } from "./rest/rest-facade.js";
import { businessServices, routes } from "./routes.js";
import { HealthState } from "./services/health-service.js";
import { AuthRepository } from "./storage/auth-repository.js";
import type { Database } from "./storage/database.js";
import { DepartmentRepository } from "./storage/department-repository.js";
import { EnvironmentConfigRepository } from "./storage/environment-config-repository.js";
import { DirectoryRepository } from "./storage/directory-repository.js";
import { UsageRepository } from "./storage/usage-repository.js";

export interface AppDeps {
  database: Database;
  logger: Logger;
  /** Wraps the per-environment data keys that seal secrets. */
  keys: KeyProvider;
}

export interface App {
  handler: (req: HttpRequest, res: HttpResponse) => void;
  /** Requests started and not yet answered. */
  inFlight(): number;
  /** Starts draining: health turns NOT_SERVING and open Watch streams end. */
  beginShutdown(): void;
}

export function createApp({ database, logger, keys }: AppDeps): App {
  const authRepository = new AuthRepository(database.db);
  const services = businessServices({
    access: new AccessAdmin(authRepository, new DirectoryRepository(database.db)),
    departments: new DepartmentRepository(database.db),
    usage: new UsageRepository(database),
    environments: new EnvironmentConfigs(new EnvironmentConfigRepository(database.db), keys),
  });
  const pipeline = new CallPipeline(new Authenticator(authRepository), database.faultOf);
  const health = new HealthState(services.map((s) => s.service.typeName));
  const rest = new RestFacade(services, pipeline);
  const connectJson = new ConnectJsonUnary(services, pipeline);
  const rpc = connectNodeAdapter({
    routes: routes(services, pipeline, health),
    readMaxBytes: MAX_BODY_BYTES,
    // Unknown JSON fields are refused on Connect JSON as on REST: a misspelt field must not pass silently.
    jsonOptions: { useProtoFieldName: true, ignoreUnknownFields: false },
    contextValues: (req) => createContextValues().set(callLogKey, callLogOf(req)),
    fallback: (req, res) => {
      const log = callLogOf(req);
      log.code = ErrorCode.ROUTE_NOT_FOUND;
      writeError(res as HttpResponse, log.requestId, new AppError(ErrorCode.ROUTE_NOT_FOUND, `no route for ${req.method} ${(req.url ?? "").split("?")[0]}`));
    },
  });
  let inFlight = 0;
  let draining = false;

  const handler = (req: HttpRequest, res: HttpResponse) => {
    const started = performance.now();
    const requestId = resolveRequestId(req.headers["x-request-id"]);
    req.headers["x-request-id"] = requestId; // Connect handlers read the resolved id from here
    res.setHeader("x-request-id", requestId);
    const log: CallLog = { requestId };
    attachCallLog(req, log);
    inFlight++;
    res.once("close", () => {
      inFlight--;
      writeAccessLog(logger, req, res, log, performance.now() - started);
    });

    const path = (req.url ?? "/").split("?")[0];
    if (path === "/healthz") {
      res.statusCode = draining ? 503 : 200;
      res.setHeader("content-type", "application/json");
      res.end(draining ? '{"status":"draining"}' : '{"status":"ok"}');
      return;
    }
    if (!rest.handle(req, res, log) && !connectJson.handle(req, res, log)) rpc(req, res);
  };

  return {
    handler,
    inFlight: () => inFlight,
    beginShutdown() {
      draining = true;
      health.setAllNotServing();
    },
  };
}

function writeAccessLog(logger: Logger, req: HttpRequest, res: HttpResponse, log: CallLog, durationMs: number): void {
  const line = {
    request_id: log.requestId,
    method: req.method,
    path: (req.url ?? "").split("?")[0],
    // 499 (nginx's "client closed request"): the caller went away before the answer was written.
    status: res.writableFinished ? res.statusCode : 499,
    duration_ms: Math.round(durationMs * 100) / 100,
    procedure: log.procedure,
    enterprise_id: log.enterpriseId,
    code: log.code,
  };
  if (log.cause !== undefined) logger.error({ ...line, err: log.cause }, "request failed");
  else if (log.storeFault !== undefined) logger.warn({ ...line, store_fault: log.storeFault }, "store unavailable");
  else logger.info(line, "request");
}
