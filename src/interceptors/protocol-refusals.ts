// What connect-es answered by itself, noted in the call log: a refusal before any handler ran (a GET of a
// method that is not idempotent, an incomplete envelope) has no
// vendor code of the service's, and would count and log as a success. It is given the first of the
// table's codes that are about the request rather than a resource (PROTOCOL_CODES) with its HTTP status
// (Connect unary) or RPC code (gRPC, gRPC-Web, Connect streams); one no such code fits (the health
// service's not_found for an unknown service, a 505 for a stream over HTTP/1.1) is 4001, the request's
// fault, or 2001 when the status says the server's. Also here: the Allow header connect-es's 405 lacks.
import { Code } from "@connectrpc/connect";
import { compressedFlag, type UniversalHandler, type UniversalServerRequest } from "@connectrpc/connect/protocol";
import { endStreamFlag, endStreamFromJson } from "@connectrpc/connect/protocol-connect";
import { trailerFlag } from "@connectrpc/connect/protocol-grpc-web";
import { ErrorCode } from "../domain/errors.js";
import { errorEntry, type ErrorCodeEntry } from "../error-table.js";
import { callLogKey, type CallLog } from "./call-log.js";

/** Wraps a handler so that an error answer without a vendor code in the call log gets one. */
export function notingProtocolRefusals(handler: UniversalHandler): UniversalHandler {
  const noting = async (req: UniversalServerRequest) => {
    const res = await handler(req);
    const log = req.contextValues?.get(callLogKey);
    if (!log || log.code !== undefined) return res;
    if (res.status !== 200) {
      log.code = vendorCode((entry) => entry.httpStatus === res.status, res.status >= 500 && res.status !== 505);
      // connect-es's 405 (a GET of a method that is not idempotent) says nothing of what is allowed; RFC 9110 asks for Allow.
      return res.status === 405 ? { ...res, header: { ...Object.fromEntries(new Headers(res.header)), allow: handler.allowedMethods.join(", ") } } : res;
    }
    // A Connect unary answer of 200 is a success; the others end with their status.
    const type = res.header?.get("content-type") ?? "";
    const enveloped = /^application\/(grpc-web|connect\+)/i.test(type);
    return res.trailer || enveloped ? { ...res, body: notedAtEnd(res.body, res.trailer, log) } : res;
  };
  return Object.assign(noting, handler);
}

/** The body as it is; once it has ended, its status (gRPC's trailer, or the last envelope: gRPC-Web's trailer, Connect's end of stream). */
async function* notedAtEnd(body: AsyncIterable<Uint8Array> | undefined, trailer: Headers | undefined, log: CallLog): AsyncIterable<Uint8Array> {
  let last: Uint8Array | undefined;
  if (body) {
    for await (const chunk of body) {
      last = chunk;
      yield chunk;
    }
  }
  if (log.code !== undefined) return;
  const status = trailer ? trailer.get("grpc-status") ?? undefined : last && lastStatus(last);
  if (status !== undefined && Number(status) !== 0) log.code = vendorCode((entry) => entry.rpcCode === Number(status), SERVER_SIDE.has(Number(status)));
}

/** The RPC code of a final envelope (0: ok): a gRPC-Web trailer or a Connect end of stream; undefined for anything else. */
function lastStatus(envelope: Uint8Array): number | undefined {
  const flags = envelope[0]!;
  if (envelope.length < 5 || (flags & compressedFlag) !== 0) return undefined;
  const data = Buffer.from(envelope.buffer, envelope.byteOffset + 5, envelope.byteLength - 5);
  if ((flags & trailerFlag) !== 0) return Number(/^grpc-status:\s*(\d+)/im.exec(data.toString("latin1"))?.[1] ?? Code.Unknown);
  if ((flags & endStreamFlag) === 0) return undefined;
  try {
    return endStreamFromJson(data).error?.code ?? 0;
  } catch {
    return undefined; // not an end of stream connect-es wrote: nothing to note
  }
}

/** The codes a refusal of the protocol may take, in the order they are tried. */
const PROTOCOL_CODES = [ErrorCode.INVALID_PARAMETER, ErrorCode.METHOD_NOT_ALLOWED, ErrorCode.BODY_TOO_LARGE,
  ErrorCode.UNSUPPORTED_MEDIA_TYPE, ErrorCode.INVALID_ACCESS_TOKEN, ErrorCode.UNAVAILABLE, ErrorCode.DEADLINE_EXCEEDED, ErrorCode.CANCELED,
  ErrorCode.INTERNAL].map(errorEntry);

/** The RPC codes of a server's fault; the others a protocol code does not fit are the request's. */
const SERVER_SIDE = new Set<number>([Code.Unknown, Code.Internal, Code.DataLoss]);

function vendorCode(matches: (entry: ErrorCodeEntry) => boolean, serverSide: boolean): number {
  return PROTOCOL_CODES.find(matches)?.code ?? (serverSide ? ErrorCode.INTERNAL : ErrorCode.INVALID_PARAMETER);
}
