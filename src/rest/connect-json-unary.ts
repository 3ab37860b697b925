// Connect-protocol unary calls with JSON bodies to the business services. connect-es decodes JSON
// itself, before any interceptor, and its errors quote the offending value (a mistyped secret, say)
// and carry no ErrorDetail. So these calls are decoded here by the same strict reader as REST, run
// through the same CallPipeline, and answered in the Connect protocol's unary JSON form. Binary,
// compressed, GET and streaming calls, and gRPC and gRPC-Web, stay with the Connect adapter.
import { create, toJson, type DescMethodUnary } from "@bufbuild/protobuf";
import { codeToHttpStatus, errorToJson, parseTimeout } from "@connectrpc/connect/protocol-connect";
import { AppError, ErrorCode, invalidParameter } from "../domain/errors.js";
import { endWithBody } from "../http/compression.js";
import type { CallLog } from "../interceptors/call-log.js";
import { untilAborted } from "../interceptors/call-signal.js";
import { endpointsOf, type CallPipeline, type Endpoint, type ServedService } from "../interceptors/call-pipeline.js";
import { toConnectError } from "../interceptors/connect-errors.js";
import type { HttpRequest, HttpResponse } from "./envelope.js";
import { JSON_CONTENT_TYPE, readJsonBody } from "./rest-facade.js";
import { messageFromRestJson } from "./rest-json.js";

type UnaryEndpoint = Endpoint & { method: DescMethodUnary };

export class ConnectJsonUnary {
  private readonly endpoints = new Map<string, UnaryEndpoint>();

  constructor(services: readonly ServedService[], private readonly pipeline: CallPipeline) {
    for (const { method, access, handler } of endpointsOf(services)) {
      if (method.methodKind !== "unary") continue;
      this.endpoints.set(`/${method.parent.typeName}/${method.name}`, { method, access, handler });
    }
  }

  /** Answers a Connect unary JSON POST to a business method; false for anything else. */
  handle(req: HttpRequest, res: HttpResponse, log: CallLog, signal: AbortSignal): boolean {
    if (req.method !== "POST") return false;
    const endpoint = this.endpoints.get((req.url ?? "").split("?")[0]!);
    if (!endpoint) return false;
    const encoding = req.headers["content-encoding"];
    if (!JSON_CONTENT_TYPE.test(req.headers["content-type"] ?? "") || (encoding && encoding !== "identity")) return false;
    this.serve(req, res, log, signal, endpoint).catch((error) => {
      log.code = ErrorCode.INTERNAL;
      log.cause = error;
      if (!res.headersSent) writeError(res, log, new AppError(ErrorCode.INTERNAL, "internal error"));
    });
    return true;
  }

  private async serve(req: HttpRequest, res: HttpResponse, log: CallLog, signal: AbortSignal, { method, access, handler }: UnaryEndpoint): Promise<void> {
    let response;
    try {
      try {
        checkCallerTimeout(req);
      } catch (error) {
        if (error instanceof AppError) log.code = error.code;
        throw error;
      }
      const meta = { authorization: req.headers.authorization, log, signal };
      // Authentication comes first: without a valid token the body is drained, never parsed.
      const authorized = await this.pipeline.authorize(method, access, meta).catch((error: unknown) => {
        req.resume();
        throw error;
      });
      let request;
      try {
        request = messageFromRestJson(method.input, await untilAborted(readJsonBody(req), signal));
      } catch (error) {
        if (error instanceof AppError) log.code = error.code;
        throw error;
      }
      response = await this.pipeline.run(method, access, request as never, meta, handler as never, authorized);
    } catch (error) {
      if (error instanceof AppError) return writeError(res, log, error);
      throw error;
    }
    const body = JSON.stringify(toJson(method.output, create(method.output, response as never), { useProtoFieldName: true }));
    res.statusCode = 200;
    res.setHeader("content-type", "application/json");
    endWithBody(res, body);
  }
}

/**
 * Refuses a `connect-timeout-ms` that is not a timeout (the caller's valid deadline is already the
 * call's: app.ts makes the signal from the shorter of it and the server's).
 */
function checkCallerTimeout(req: HttpRequest): void {
  const header = req.headers["connect-timeout-ms"];
  if (header === undefined || parseTimeout(String(header), Number.MAX_SAFE_INTEGER).timeoutMs !== undefined) return;
  req.resume();
  throw invalidParameter("connect-timeout-ms: expected a whole number of milliseconds (at most 10 digits)");
}

function writeError(res: HttpResponse, log: CallLog, error: AppError): void {
  const connectError = toConnectError(error, log.requestId);
  const body = JSON.stringify(errorToJson(connectError, undefined));
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  res.statusCode = codeToHttpStatus(connectError.code);
  res.setHeader("content-type", "application/json");
  endWithBody(res, body);
}
