// The typed error every layer throws. Its code is a number from the proto ErrorCode table; the
// transports (REST envelope, Connect/gRPC detail) turn it into their own shapes in one place each.
import { ErrorCode } from "../../gen/enterprise_admin/v1/errors_pb.js";
import { shown } from "./text-rules.js";

export { ErrorCode };

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    /** Caller-facing text: names the field and the limit, never a secret or a stack. */
    message: string,
    /** Extra response headers, e.g. Retry-After. */
    readonly headers: Record<string, string> = {},
    /** What the server's log says of it, never the caller: the call's line becomes a warning with this message and these fields. */
    readonly logWarning?: LogWarning,
  ) {
    super(message);
    this.name = "AppError";
  }
}

export interface LogWarning {
  message: string;
  fields: Record<string, unknown>;
}

export const invalidParameter = (message: string) => new AppError(ErrorCode.INVALID_PARAMETER, message);
export const methodNotAllowed = (method: string | undefined, path: string, allow: string) =>
  new AppError(ErrorCode.METHOD_NOT_ALLOWED, `method ${shown(method)} not allowed on ${shown(path)}; allowed: ${allow}`);
export const routeNotFound = (method: string | undefined, path: string) =>
  new AppError(ErrorCode.ROUTE_NOT_FOUND, `no route for ${shown(method)} ${shown(path)}`);
export const bodyTooLarge = (limit: number) => new AppError(ErrorCode.BODY_TOO_LARGE, `body: larger than the limit of ${limit} bytes`);
export const invalidToken = (message = "access token missing, invalid or expired") =>
  new AppError(ErrorCode.INVALID_ACCESS_TOKEN, message);
export const permissionDenied = (permission: string) =>
  new AppError(ErrorCode.PERMISSION_DENIED, `permission denied: this operation needs ${permission}`);
