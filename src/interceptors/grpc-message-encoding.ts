// grpc-message in the gRPC spec's percent-encoding. connect-es encodes it with encodeURIComponent,
// which also escapes ':', '/', ',' and the like; grpc-js decodes it with decodeURI, which leaves those
// escaped, so grpc-js callers read "department_ids%3A ...". The spec escapes only the bytes outside
// 0x20-0x7E, and '%' itself: every decoder (grpc-js, grpc-go, buf curl, connect-es) reads that form alike.
import type { UniversalHandler, UniversalServerRequest } from "@connectrpc/connect/protocol";

/** Wraps a handler so that the grpc-message trailer of its gRPC responses is encoded by the spec. */
export function encodeGrpcMessageBySpec(handler: UniversalHandler): UniversalHandler {
  const encoding = async (req: UniversalServerRequest) => {
    const res = await handler(req);
    // Only gRPC has HTTP trailers here; Connect puts errors in the body, gRPC-Web its trailers too.
    if (res.trailer === undefined) return res;
    return { ...res, body: reencodedAtEnd(res.body, res.trailer) };
  };
  return Object.assign(encoding, handler);
}

/** The body as it is; once it has ended (the status is set then), the trailer's message re-encoded. */
async function* reencodedAtEnd(body: AsyncIterable<Uint8Array> | undefined, trailer: Headers): AsyncIterable<Uint8Array> {
  if (body) yield* body;
  const sent = trailer.get("grpc-message");
  if (sent === null) return;
  try {
    trailer.set("grpc-message", grpcMessageBySpec(decodeURIComponent(sent)));
  } catch {
    // Not connect-es's encoding: leave it as it is.
  }
}

/** `message` as a grpc-message value: the bytes outside 0x20-0x7E, and `%`, percent-encoded. */
export function grpcMessageBySpec(message: string): string {
  let out = "";
  for (const byte of Buffer.from(message, "utf8")) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}
