// Connect-protocol unary calls with JSON bodies to the business services. connect-es decodes JSON
// itself, before any interceptor, and its errors quote the offending value (a mistyped secret, say)
// and carry no ErrorDetail. So these calls are decoded here by the same strict reader as REST, run
// through the same interceptor chain and handler (CallChain, in process), and answered in the Connect
// protocol's unary JSON form. Binary, compressed, GET and streaming calls, and gRPC and gRPC-Web, stay
// with the Connect adapter.
import { toJson, type DescMethod, type DescMethodUnary } from "@bufbuild/protobuf";
import { AppError, ErrorCode } from "../domain/errors.js";
import { contentCoding, endWithBody } from "../http/compression.js";
import type { CallChain } from "../interceptors/call-chain.js";
import type { CallLog } from "../interceptors/call-log.js";
import { refuseUnreadableTimeout, untilAborted, type CallDeadline } from "../interceptors/call-signal.js";
import { toConnectError, writeConnectError } from "../interceptors/connect-errors.js";
import type { ServedService } from "../routes.js";
import type { HttpRequest, HttpResponse } from "./envelope.js";
import { JSON_CONTENT_TYPE, readJsonBody } from "./rest-facade.js";
import { messageFromRestJson } from "./rest-json.js";

export class ConnectJsonUnary {
  private readonly methods = new Map<string, DescMethodUnary>();

  constructor(services: readonly ServedService[], private readonly chain: CallChain) {
    for (const { service } of services) {
      for (const method of service.methods) {
        if (isUnary(method)) this.methods.set(`/${service.typeName}/${method.name}`, method);
      }
    }
  }

  /** Answers a Connect unary JSON POST to a business method; false for anything else. */
  handle(req: HttpRequest, res: HttpResponse, log: CallLog, signal: AbortSignal, deadline: CallDeadline): boolean {
    if (req.method !== "POST") return false;
    const method = this.methods.get((req.url ?? "").split("?")[0]!);
    if (!method) return false;
    if (!JSON_CONTENT_TYPE.test(req.headers["content-type"] ?? "") || contentCoding(req.headers["content-encoding"]) !== "identity") return false;
    this.serve(req, res, log, signal, deadline, method).catch((error) => {
      log.code = ErrorCode.INTERNAL;
      log.cause = error;
      if (!res.headersSent) writeConnectError(res, toConnectError(new AppError(ErrorCode.INTERNAL, "internal error"), log.requestId));
    });
    return true;
  }

  private async serve(req: HttpRequest, res: HttpResponse, log: CallLog, signal: AbortSignal, deadline: CallDeadline, method: DescMethodUnary): Promise<void> {
    const call = this.chain.open(method, {
      log, signal, deadline, authorization: req.headers.authorization, protocolName: "connect", requestMethod: "POST", url: req.url ?? "/",
    });
    let response;
    try {
      // Authentication comes first, then the call's headers: without a valid token the body is drained, never parsed.
      await call.authorize().then(() => refuseUnreadableTimeout(req)).catch((error: unknown) => {
        req.resume();
        throw error;
      });
      const request = messageFromRestJson(method.input, await untilAborted(readJsonBody(req), signal));
      response = await call.unary(request);
    } catch (error) {
      return writeConnectError(res, call.failure(error));
    }
    call.responseHeader.forEach((value, name) => res.setHeader(name, value));
    const body = JSON.stringify(toJson(method.output, response, { useProtoFieldName: true }));
    res.statusCode = 200;
    res.setHeader("content-type", "application/json");
    endWithBody(res, body);
  }
}

const isUnary = (method: DescMethod): method is DescMethodUnary => method.methodKind === "unary";

