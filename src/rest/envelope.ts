// The REST envelope (docs/api-rules.md, REST JSON), and the HTTP status of each error code.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { AppError, ErrorCode } from "../domain/errors.js";
import { errorEntry } from "../error-table.js";
import { endWithBody } from "../http/compression.js";

export type HttpRequest = IncomingMessage | Http2ServerRequest;
export type HttpResponse = ServerResponse | Http2ServerResponse;

/** Writes `{"code":0,"message":"success","request_id":…,"data":<dataJson>}`. */
export function writeSuccess(res: HttpResponse, requestId: string, dataJson: string): void {
  send(res, 200, `{"code":0,"message":"success","request_id":${JSON.stringify(requestId)},"data":${dataJson}}`);
}

/** Writes the error envelope with the status the proto table gives the code. */
export function writeError(res: HttpResponse, requestId: string, error: AppError, headers: Record<string, string> = {}): void {
  const entry = errorEntry(error.code);
  for (const [name, value] of Object.entries({ ...error.headers, ...headers })) res.setHeader(name, value);
  send(res, entry.httpStatus, JSON.stringify({ code: error.code, message: error.message, request_id: requestId, data: null }));
}

export function writeInternalError(res: HttpResponse, requestId: string): void {
  writeError(res, requestId, new AppError(ErrorCode.INTERNAL, "internal error"));
}

function send(res: HttpResponse, status: number, body: string): void {
  res.statusCode = status;
  res.setHeader("content-type", "application/json; charset=utf-8");
  endWithBody(res, body);
}
