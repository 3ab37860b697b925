// AppError -> ConnectError for the RPC transports: the proto's RPC code, the caller-facing message,
// and an ErrorDetail carrying the same number a REST caller sees; the AppError stays its cause. And the
// Connect protocol's unary error, for the answers the service writes itself.
import { create } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus, errorToJson } from "@connectrpc/connect/protocol-connect";
import { ErrorDetailSchema } from "../../gen/enterprise_admin/v1/errors_pb.js";
import { AppError, ErrorCode } from "../domain/errors.js";
import { errorEntry } from "../error-table.js";
import { endWithBody } from "../http/compression.js";
import type { HttpResponse } from "../rest/envelope.js";

export function toConnectError(error: AppError, requestId: string): ConnectError {
  const appError = error instanceof AppError ? error : new AppError(ErrorCode.INTERNAL, "internal error");
  const entry = errorEntry(appError.code);
  return new ConnectError(appError.message, entry.rpcCode, appError.headers, [
    { desc: ErrorDetailSchema, value: create(ErrorDetailSchema, { code: appError.code, message: appError.message, requestId }) },
  ], appError);
}

/** The AppError a call's ConnectError was made from (see toConnectError): what the REST envelope shows. */
export function appErrorOf(error: ConnectError): AppError {
  return error.cause instanceof AppError ? error.cause : new AppError(ErrorCode.INTERNAL, "internal error");
}

/** The Connect protocol's unary error: the code's HTTP status, its headers (Retry-After), the JSON error with its details. */
export function writeConnectError(res: HttpResponse, error: ConnectError): void {
  // Field names as the proto spells them (debug.request_id), as connect-es writes them on the other paths (app.ts jsonOptions).
  const body = JSON.stringify(errorToJson(error, { useProtoFieldName: true }));
  error.metadata.forEach((value, name) => res.setHeader(name, value));
  res.statusCode = codeToHttpStatus(error.code);
  res.setHeader("content-type", "application/json");
  endWithBody(res, body);
}
