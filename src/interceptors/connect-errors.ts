// AppError -> ConnectError for the RPC transports: the proto's RPC code, the caller-facing message,
// and an ErrorDetail carrying the same number a REST caller sees; the AppError stays its cause.
import { create } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import { ErrorDetailSchema } from "../../gen/enterprise_admin/v1/errors_pb.js";
import { AppError, ErrorCode } from "../domain/errors.js";
import { errorEntry } from "../error-table.js";

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
