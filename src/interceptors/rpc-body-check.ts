// Request bodies checked before connect-es decodes them, refused as 4001 invalid_argument in the
// caller's protocol, with the service's ErrorDetail:
// - a binary body that is not a valid protobuf message (connect-es would answer "internal", as if the
//   server were at fault), naming the field when a string is not UTF-8; a compressed one is decompressed
//   here (by connect-es's own compressions) and handed on uncompressed;
// - a JSON body connect-es would decode itself: its errors quote the offending value (a mistyped
//   secret) and carry no ErrorDetail, and it rounds integers past 2^53. Uncompressed Connect JSON is
//   read by the service's own reader, as REST's: a unary call's by rest/connect-json-unary.ts, a
//   streaming call's message here, handed on re-encoded as that reader read it. Compressed Connect
//   JSON and gRPC or gRPC-Web with the JSON codec are refused;
// - an enveloped body (gRPC, gRPC-Web, Connect streams) that is not one whole message: none, several,
//   or one cut short (connect-es would answer some of these "unimplemented");
// - a binary body past the size limit, as sent or decompressed: 4130 resource_exhausted, as on REST
//   (connect-es's own limit answers without the service's error detail); one in a compression the
//   service does not take: 4150.
// A bidirectional stream's messages (gRPC reflection's) come as the caller sends them, so they are not
// read first: one that connect-es cannot decode is refused as 4001 as it comes (decodableRequests).
import { isUtf8 } from "node:buffer";
import { fromBinary, ScalarType, toJsonString, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { compressedFlag, encodeEnvelope, type Compression, type UniversalHandler, type UniversalServerRequest } from "@connectrpc/connect/protocol";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import type PQueue from "p-queue";
import { AppError, bodyTooLarge, ErrorCode, invalidParameter } from "../domain/errors.js";
import { contentCoding } from "../http/compression.js";
import { parseJsonBody } from "../rest/json-body.js";
import { messageFromRestJson } from "../rest/rest-json.js";
import { callLogKey, procedureOf } from "./call-log.js";
import { callerTimeoutProblem } from "./call-signal.js";
import { toConnectError } from "./connect-errors.js";

/** How a protocol carries the request message: the whole body, or gRPC length-prefixed envelopes. */
type Framing = "whole" | "enveloped";
type Codec = "proto" | "json";
/** A request's framing and codec, and the header naming its messages' compression. */
interface BodyForm {
  framing: Framing;
  codec: Codec;
  encodingHeader: string;
}

const CONNECT_PROTO = /^application\/proto$/i;
/** Connect's streaming protocol: its request message is enveloped as gRPC's is. */
const CONNECT_STREAM_PROTO = /^application\/connect\+proto$/i;
const CONNECT_STREAM_JSON = /^application\/connect\+json$/i;
const GRPC_PROTO = /^application\/grpc(-web)?(\+proto)?$/i;
const GRPC_JSON = /^application\/grpc(-web)?\+json/i;
const CONNECT_JSON = /^application\/json/i;

/** The compressions a request message may come in, and the line in which messages are decompressed (see app.ts). */
export interface Decompression {
  compressions: readonly Compression[];
  line: PQueue;
}

/**
 * Wraps a unary or server-streaming method's handler (one request message) so that a malformed binary body is refused as 4001, and
 * one past `maxBytes` (as sent, or decompressed) as 4130.
 */
export function refuseMalformedProtobuf(handler: UniversalHandler, maxBytes: number, { compressions, line }: Decompression): UniversalHandler {
  if (handler.method.methodKind !== "unary" && handler.method.methodKind !== "server_streaming") return handler;
  const schema = handler.method.input;
  const checking = (req: UniversalServerRequest) => {
    const form = bodyFormOf(req.header);
    if (form === undefined || !isByteStream(req.body)) return handler(req);
    const timeoutProblem = callerTimeoutProblem(req.header);
    if (timeoutProblem !== undefined) {
      // Refused with the service's detail (connect-es answered "protocol error: invalid … timeout value" without it).
      return handler({ ...req, header: withoutBodyHeaders(req.header), body: refusedBody(refusal(handler, req, invalidParameter(timeoutProblem))) });
    }
    const encoding = contentCoding(req.header.get(form.encodingHeader));
    const compression = compressions.find((c) => c.name === encoding);
    const refuse = (error: AppError) => refusal(handler, req, error);
    // Handed on uncompressed (an envelope says so itself), and without a length, which connect-es would check by itself.
    const header = new Headers(req.header);
    header.delete("content-length");
    if (form.framing === "whole") header.delete(form.encodingHeader);
    else header.set(form.encodingHeader, encoding); // as connect-es spells it
    if (encoding !== "identity" && compression === undefined) {
      // Refused as REST refuses one (connect-es answered "unimplemented", without the service's error detail or code).
      header.delete(form.encodingHeader);
      const accepted = ["identity", ...compressions.map((c) => c.name)].join(", ");
      return handler({ ...req, header, body: refusedBody(refuse(new AppError(ErrorCode.UNSUPPORTED_MEDIA_TYPE,
        `${form.encodingHeader}: ${JSON.stringify(encoding)} is not accepted: send one of ${accepted}`))) });
    }
    if (Number(req.header.get("content-length")) > bodyLimit(form.framing, maxBytes)) {
      return handler({ ...req, header, body: refusedBody(refuse(bodyTooLarge(maxBytes))) });
    }
    // Decompressed in the line: a flood of small compressed bodies must not each grow to maxBytes at once.
    const inLine: Compression | undefined = compression && { ...compression, decompress: (data, max) => line.add(() => compression.decompress(data, max)) };
    return handler({ ...req, header, body: checkedBody(req.body, form, inLine, schema, maxBytes, refuse) });
  };
  return Object.assign(checking, handler);
}

/** Wraps a unary or server-streaming method's handler so that a JSON body connect-es would decode itself is refused as 4001, unread. */
export function refuseForeignJson(handler: UniversalHandler): UniversalHandler {
  if (handler.method.methodKind !== "unary" && handler.method.methodKind !== "server_streaming") return handler;
  const checking = (req: UniversalServerRequest) => {
    const type = req.header.get("content-type") ?? "";
    const compressed = (name: string) => contentCoding(req.header.get(name)) !== "identity";
    const foreign = GRPC_JSON.test(type) || (CONNECT_JSON.test(type) && compressed("content-encoding"))
      || (CONNECT_STREAM_JSON.test(type) && compressed("connect-content-encoding"));
    if (!foreign) return handler(req);
    const error = refusal(handler, req, invalidParameter("JSON bodies are taken uncompressed over the Connect protocol (or REST), and not over gRPC or " +
      "gRPC-Web: send this one uncompressed over Connect, or as protobuf, which may be compressed on every protocol"));
    return handler({ ...req, header: withoutBodyHeaders(req.header), body: refusedBody(error) });
  };
  return Object.assign(checking, handler);
}

/**
 * A refused request's headers without those connect-es checks before it reads the body (a length past its limit, a coding it lacks,
 * a deadline it cannot read, each answered its own way without the service's detail): it then reads the body to the refusal.
 */
export function withoutBodyHeaders(header: Headers): Headers {
  const kept = new Headers(header);
  for (const name of ["content-length", "content-encoding", "connect-content-encoding", "grpc-encoding", "grpc-timeout", "connect-timeout-ms"]) kept.delete(name);
  return kept;
}

/** The refusal of a request's body, noted in its call log. */
function refusal(handler: UniversalHandler, req: UniversalServerRequest, error: AppError): ConnectError {
  const log = req.contextValues?.get(callLogKey);
  if (log) {
    log.procedure = procedureOf(handler.method);
    log.code = error.code;
  }
  return toConnectError(error, log?.requestId ?? "");
}

/**
 * A bidirectional stream's requests: a message connect-es cannot decode ("internal" there, a server fault in the log and the metrics) is
 * refused as 4001 with the service's detail.
 */
export async function* decodableRequests<Request>(requests: AsyncIterable<Request>, context: HandlerContext): AsyncIterable<Request> {
  try {
    yield* requests;
  } catch (error) {
    if (!(error instanceof ConnectError) || error.code !== Code.Internal) throw error;
    const log = context.values.get(callLogKey);
    const refused = invalidParameter(`body: a message is not a valid ${context.method.input.typeName} (${error.rawMessage.replace(/^parse binary: /, "")})`);
    if (log) log.code = refused.code;
    throw toConnectError(refused, log?.requestId ?? "");
  }
}

/** A body that fails when read: connect-es answers with its error in the caller's protocol. */
export async function* refusedBody(error: ConnectError): AsyncIterable<Uint8Array> {
  throw error;
}

/** The most bytes of a body whose message is at most `maxBytes`: gRPC's envelope adds a 5-byte header. */
const bodyLimit = (framing: Framing, maxBytes: number) => maxBytes + (framing === "enveloped" ? 5 : 0);

function bodyFormOf(header: Headers): BodyForm | undefined {
  const type = header.get("content-type") ?? "";
  if (CONNECT_PROTO.test(type)) return { framing: "whole", codec: "proto", encodingHeader: "content-encoding" };
  if (CONNECT_STREAM_JSON.test(type)) return { framing: "enveloped", codec: "json", encodingHeader: "connect-content-encoding" };
  if (CONNECT_STREAM_PROTO.test(type)) return { framing: "enveloped", codec: "proto", encodingHeader: "connect-content-encoding" };
  return GRPC_PROTO.test(type) ? { framing: "enveloped", codec: "proto", encodingHeader: "grpc-encoding" } : undefined;
}

const isByteStream = (body: unknown): body is AsyncIterable<Uint8Array> =>
  typeof body === "object" && body !== null && Symbol.asyncIterator in body;

/**
 * The body as it came, after its messages were checked. Past `maxBytes` (plus an envelope header) it is refused unread further, as
 * REST refuses one (4130, where connect-es's own limit answers without the service's error detail).
 */
async function* checkedBody(body: AsyncIterable<Uint8Array>, { framing, codec }: BodyForm, compression: Compression | undefined,
  schema: DescMessage, maxBytes: number, refuse: (error: AppError) => ConnectError): AsyncIterable<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const it = body[Symbol.asyncIterator]();
  for (let next = await it.next(); !next.done; next = await it.next()) {
    chunks.push(next.value);
    size += next.value.byteLength;
    if (size > bodyLimit(framing, maxBytes)) throw refuse(bodyTooLarge(maxBytes));
  }
  const bytes = Buffer.concat(chunks);
  const message = framing === "whole" ? { flags: compression ? compressedFlag : 0, data: bytes } : theOneEnvelope(bytes, refuse);
  if (codec === "json") {
    // A Connect JSON stream's message goes on as the service's reader read it (compressed ones are refused by refuseForeignJson).
    if (message.flags !== 0) throw refuse(invalidParameter("body: a compressed message: JSON is taken uncompressed"));
    yield encodeEnvelope(0, Buffer.from(toJsonString(schema, jsonMessage(schema, message.data, refuse))));
    return;
  }
  const data = message.flags === 0 ? message.data : await decompressed(message.data, compression, maxBytes, refuse);
  const problem = messageProblem(schema, data);
  if (problem !== undefined) throw refuse(invalidParameter(problem));
  yield framing === "whole" ? data : encodeEnvelope(0, data);
}

/** A compressed message's bytes, at most `maxBytes` of them (else 4130). */
async function decompressed(data: Uint8Array, compression: Compression | undefined, maxBytes: number,
  refuse: (error: AppError) => ConnectError): Promise<Uint8Array> {
  if (compression === undefined) throw refuse(invalidParameter("body: a compressed message, but the request names no compression (or identity)"));
  try {
    return await compression.decompress(data, maxBytes);
  } catch (error) {
    if (error instanceof ConnectError && error.code === Code.ResourceExhausted) throw refuse(bodyTooLarge(maxBytes));
    throw refuse(invalidParameter(`body: not valid ${compression.name} data`));
  }
}

function jsonMessage(schema: DescMessage, bytes: Buffer, refuse: (error: AppError) => ConnectError) {
  try {
    return messageFromRestJson(schema, parseJsonBody(bytes));
  } catch (error) {
    throw error instanceof AppError ? refuse(error) : error;
  }
}

/** The request's one enveloped message (a unary or server-streaming method takes one): none, more, or one cut short is 4001. */
function theOneEnvelope(bytes: Buffer, refuse: (error: AppError) => ConnectError): { flags: number; data: Buffer } {
  const envelopes: { flags: number; data: Buffer }[] = [];
  for (let at = 0; at < bytes.length;) {
    const end = at + 5 <= bytes.length ? at + 5 + bytes.readUInt32BE(at + 1) : Infinity;
    if (end > bytes.length) throw refuse(invalidParameter("body: a message cut short (its envelope announces more bytes than came)"));
    envelopes.push({ flags: bytes[at]!, data: bytes.subarray(at + 5, end) });
    at = end;
  }
  if (envelopes.length !== 1) throw refuse(invalidParameter(`body: ${envelopes.length} messages; this method takes one`));
  if ((envelopes[0]!.flags & ~compressedFlag) !== 0) throw refuse(invalidParameter("body: a message with flags a request cannot have"));
  return envelopes[0]!;
}

function messageProblem(schema: DescMessage, bytes: Uint8Array): string | undefined {
  try {
    fromBinary(schema, bytes);
  } catch (error) {
    return fieldProblem(schema, bytes) ?? `body: not a valid ${schema.typeName} message (${error instanceof Error ? error.message : "unreadable"})`;
  }
  // The decoder reads a field sent with another wire type as if it were of its own when it can (a number sent as length-delimited bytes
  // by its length, one sent as an empty group by the group's end tag): every body is walked for one, named as the decoder's errors are.
  const rules = new Map<DescMessage, WireRules>();
  const rulesOf = (message: DescMessage) => {
    let found = rules.get(message);
    if (!found) rules.set(message, (found = wireRules(message)));
    return found;
  };
  return wireTypeMismatch(schema, bytes, rulesOf) ? fieldProblem(schema, bytes) : undefined;
}

/** Each field number of a message: the wire types its field may come in (a bit each), and its message when it holds messages. */
type WireRules = Map<number, { wireTypes: number; message: DescMessage | undefined }>;

function wireRules(schema: DescMessage): WireRules {
  return new Map(schema.fields.map((field) => [field.number, {
    wireTypes: wireTypesOf(field).reduce((bits, type) => bits | (1 << type), 0),
    message: field.fieldKind === "message" || (field.fieldKind === "list" && field.listKind === "message") ? field.message : undefined,
  }]));
}

/** Whether a field of the message, at any depth (map entries aside), came in a wire type its field does not take. */
function wireTypeMismatch(schema: DescMessage, bytes: Uint8Array, rulesOf: (message: DescMessage) => WireRules): boolean {
  const rules = rulesOf(schema);
  const reader = new BinaryReader(bytes);
  try {
    while (reader.pos < reader.len) {
      const [number, wireType] = reader.tag();
      const rule = rules.get(number);
      if (rule !== undefined && (rule.wireTypes & (1 << wireType)) === 0) return true;
      if (rule?.message !== undefined) {
        if (wireTypeMismatch(rule.message, reader.bytes(), rulesOf)) return true;
      } else {
        reader.skip(wireType, number);
      }
    }
  } catch {
    return false; // framing the decoder took: its reading stands
  }
  return false;
}

/** The first field of a message that cannot be read, named by its path: one sent with another wire type, or a string not UTF-8. */
function fieldProblem(schema: DescMessage, bytes: Uint8Array): string | undefined {
  try {
    const reader = new BinaryReader(bytes);
    const seen = new Map<DescField, number>();
    while (reader.pos < reader.len) {
      const [number, wireType] = reader.tag();
      const field = schema.fields.find((f) => f.number === number);
      const expected = field && wireTypesOf(field);
      if (expected && !expected.includes(wireType)) {
        return `${field!.name}: sent as ${WIRE_TYPE_NAMES[wireType] ?? `wire type ${wireType}`}, where this field takes ${expected.map((t) => WIRE_TYPE_NAMES[t]).join(" or ")}`;
      }
      if (!field || wireType !== WireType.LengthDelimited) {
        reader.skip(wireType, number);
        continue;
      }
      const data = reader.bytes();
      const index = seen.get(field) ?? 0;
      seen.set(field, index + 1);
      const found = problemInField(field, data, index);
      if (found !== undefined) return found;
    }
  } catch {
    // Broken framing: the caller reports the decoder's own error.
  }
  return undefined;
}

const WIRE_TYPE_NAMES: Partial<Record<WireType, string>> = {
  [WireType.Varint]: "a varint", [WireType.Bit64]: "8 fixed bytes", [WireType.LengthDelimited]: "length-delimited bytes",
  [WireType.StartGroup]: "a group", [WireType.EndGroup]: "a group's end", [WireType.Bit32]: "4 fixed bytes",
};

/** The wire types a field may come in: a repeated number packed or not. */
function wireTypesOf(field: DescField): WireType[] {
  if (field.fieldKind === "message" || field.fieldKind === "map") return [WireType.LengthDelimited];
  const scalar = field.fieldKind === "enum" || (field.fieldKind === "list" && field.listKind === "enum") ? ScalarType.INT32
    : field.fieldKind === "scalar" || (field.fieldKind === "list" && field.listKind === "scalar") ? field.scalar : undefined;
  if (scalar === undefined) return [WireType.LengthDelimited]; // a list of messages
  const single = scalar === ScalarType.STRING || scalar === ScalarType.BYTES ? WireType.LengthDelimited
    : scalar === ScalarType.DOUBLE || scalar === ScalarType.FIXED64 || scalar === ScalarType.SFIXED64 ? WireType.Bit64
      : scalar === ScalarType.FLOAT || scalar === ScalarType.FIXED32 || scalar === ScalarType.SFIXED32 ? WireType.Bit32 : WireType.Varint;
  return field.fieldKind === "list" && single !== WireType.LengthDelimited ? [single, WireType.LengthDelimited] : [single];
}

function problemInField(field: DescField, data: Uint8Array, index: number): string | undefined {
  const inner = (path: string, message: DescMessage) => {
    const found = fieldProblem(message, data);
    return found === undefined ? undefined : `${path}.${found}`;
  };
  switch (field.fieldKind) {
    case "scalar":
      return field.scalar === ScalarType.STRING && !isUtf8(data) ? `${field.name}: not valid UTF-8` : undefined;
    case "message":
      return inner(field.name, field.message);
    case "list":
      if (field.listKind === "scalar") return field.scalar === ScalarType.STRING && !isUtf8(data) ? `${field.name}[${index}]: not valid UTF-8` : undefined;
      return field.listKind === "message" ? inner(`${field.name}[${index}]`, field.message) : undefined;
    case "map": {
      // A map entry is a message of key (field 1) and value (field 2).
      const reader = new BinaryReader(data);
      let key = "";
      while (reader.pos < reader.len) {
        const [number, wireType] = reader.tag();
        if (wireType !== WireType.LengthDelimited) {
          reader.skip(wireType, number);
          continue;
        }
        const part = reader.bytes();
        if (number === 1 && field.mapKey === ScalarType.STRING) {
          if (!isUtf8(part)) return `${field.name} key: not valid UTF-8`;
          key = Buffer.from(part).toString("utf8");
        } else if (number === 2 && field.mapKind === "scalar" && field.scalar === ScalarType.STRING && !isUtf8(part)) {
          return `${field.name}.${key}: not valid UTF-8`;
        } else if (number === 2 && field.mapKind === "message") {
          const found = fieldProblem(field.message, part);
          if (found !== undefined) return `${field.name}.${key}.${found}`;
        }
      }
      return undefined;
    }
    default:
      return undefined;
  }
}
