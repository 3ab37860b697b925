// The answer to a call of a procedure no service here serves, in the caller's protocol (the fallback of the Connect adapter,
// app.ts): a gRPC client reads a status, a Connect client its JSON error, each with the service's ErrorDetail 4004.
import type { ConnectError } from "@connectrpc/connect";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { trailerFlag, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";
import { writeConnectError } from "../interceptors/connect-errors.js";
import { grpcMessageBySpec } from "../interceptors/grpc-message-encoding.js";
import type { HttpRequest, HttpResponse } from "../rest/envelope.js";

/** `/<package>.<Service>/<Method>`: the path of an RPC on every protocol. */
const RPC_PATH = /^\/[A-Za-z_][\w.]*\.[A-Za-z_]\w*\/[A-Za-z_]\w*$/;

/**
 * Answers a call of a procedure this server does not serve (`error`: its 4004) in the caller's protocol, as for a served one: gRPC with
 * grpc-status 12 (unimplemented) and the ErrorDetail in its trailers, gRPC-Web in its trailer message, Connect with its JSON error;
 * false for a path that is no RPC's, or a content type of none of them (the REST envelope's to answer).
 */
export function answeredUnknownProcedure(req: HttpRequest, res: HttpResponse, error: ConnectError): boolean {
  const type = String(req.headers["content-type"] ?? "");
  if (!RPC_PATH.test((req.url ?? "").split("?")[0]!)) return false;
  const grpc = /^application\/grpc(-web)?(\+|;|$)/i.exec(type);
  if (grpc) {
    req.resume();
    const trailer = new Headers();
    setTrailerStatus(trailer, error);
    trailer.set("grpc-message", grpcMessageBySpec(error.rawMessage));
    res.writeHead(200, { "content-type": type.split(";")[0]! });
    if (grpc[1] === undefined) {
      res.addTrailers(Object.fromEntries(trailer));
      res.end();
    } else {
      res.end(encodeEnvelope(trailerFlag, trailerSerialize(trailer))); // gRPC-Web's trailer is the body's one message
    }
    return true;
  }
  if (!/^application\/(json|proto|connect\+(json|proto))(;|$)/i.test(type)) return false;
  req.resume();
  writeConnectError(res, error);
  return true;
}
