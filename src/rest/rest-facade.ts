// The REST facade: HTTP <-> proto only. Matches the annotation-built routes, assembles the request
// (body, then path variables, then query), runs the method's handler through the same interceptor
// chain as every RPC (CallChain, in process), and answers in the envelope, or, for a server-streaming
// method, with its records streamed as CSV or NDJSON. It knows no service: a new annotated RPC needs
// no change here.
import { Http2ServerResponse } from "node:http2";
import { Readable } from "node:stream";
import { pipeline as pipeStreams } from "node:stream/promises";
import { create, type DescField, type DescMethodServerStreaming, type Message } from "@bufbuild/protobuf";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import { AppError, bodyTooLarge, ErrorCode, invalidParameter, invalidToken, methodNotAllowed, routeNotFound } from "../domain/errors.js";
import type { CallChain, LocalCall, ServedMethod } from "../interceptors/call-chain.js";
import type { CallLog } from "../interceptors/call-log.js";
import { mayHaveBody, refuseUnreadableTimeout, untilAborted, type CallDeadline } from "../interceptors/call-signal.js";
import { appErrorOf } from "../interceptors/connect-errors.js";
import type { ServedService } from "../routes.js";
import { contentCoding, streamEncoder } from "../http/compression.js";
import { writeError, writeInternalError, writeSuccess, type HttpRequest, type HttpResponse } from "./envelope.js";
import { parseJsonBody } from "./json-body.js";
import { decodeComponent, RestRouter, type RestRoute } from "./http-rules.js";
import { CONTENT_TYPES, RECORD_FORMATS, recordEncoder, recordsField, type RecordFormat } from "./record-formats.js";
import { acceptsInteger, findField, messageFromRestJson, messageToRestJsonInTurns, readScalar } from "./rest-json.js";

export const MAX_BODY_BYTES = 1024 * 1024;

/** Content-Type of a JSON body, with or without parameters such as charset. */
export const JSON_CONTENT_TYPE = /^application\/json\s*(;|$)/i;

/** Whether a path is under a REST prefix: the facade answers it, with 404 when no route matches. */
export function isRestPath(path: string): boolean {
  return path.startsWith("/openapi/") || path.startsWith("/api/");
}

export class RestFacade {
  readonly router: RestRouter;

  constructor(services: readonly ServedService[], private readonly chain: CallChain) {
    this.router = new RestRouter(services.map((s) => s.service));
  }

  /** Answers the request if its path is a REST route (or under a REST prefix); false otherwise. */
  handle(req: HttpRequest, res: HttpResponse, log: CallLog, signal: AbortSignal, deadline: CallDeadline): boolean {
    const url = req.url ?? "/";
    const queryAt = url.indexOf("?");
    const path = queryAt < 0 ? url : url.slice(0, queryAt);
    const match = this.router.match(req.method ?? "GET", path);
    if (match.kind === "none") {
      if (!isRestPath(path)) return false;
      this.fail(res, log, routeNotFound(req.method, path));
      return true;
    }
    if (match.kind === "wrong-method") {
      const allow = match.allow.join(", ");
      this.fail(res, log, methodNotAllowed(req.method, path, allow), { allow });
      req.resume();
      return true;
    }
    this.serve(req, res, log, signal, deadline, match.route, match.pathValues, queryAt < 0 ? "" : url.slice(queryAt + 1))
      .catch((error) => {
        log.code = ErrorCode.INTERNAL;
        log.cause = error;
        if (!res.headersSent) writeInternalError(res, log.requestId);
      });
    return true;
  }

  private async serve(req: HttpRequest, res: HttpResponse, log: CallLog, signal: AbortSignal, deadline: CallDeadline, route: RestRoute,
    pathValues: [DescField, string][], query: string): Promise<void> {
    const call = this.chain.open(route.method, {
      log, signal, deadline, authorization: req.headers.authorization, protocolName: "rest", requestMethod: req.method ?? "GET", url: req.url ?? "/",
    });
    try {
      // A token in the URL ends up in proxy logs and browser history: refuse it before anything else.
      if (new URLSearchParams(query).has("access_token")) {
        throw invalidToken("access_token: not accepted in the query string; send Authorization: Bearer <access_token>");
      }
      // Authentication comes first: without a valid token the body is drained, never parsed.
      await call.authorize();
      refuseUnreadableTimeout(req);
    } catch (error) {
      req.resume();
      return writeCallError(res, log, call, error);
    }
    let request;
    try {
      // A body where the route takes none (an etag sent with a DELETE) would be dropped unread: refused instead.
      if (route.body === "" && mayHaveBody(req)) throw invalidParameter(`body: ${route.httpMethod} takes no body here; send its fields in the path and the query`);
      const body = route.body === "*" ? await untilAborted(readJsonBody(req), signal) : {};
      if (route.body === "") req.resume();
      request = messageFromRestJson(route.method.input, body);
      if (route.httpMethod === "PATCH") inferUpdateMask(route.method, request as Record<string, unknown>, body);
      for (const [field, sent] of pathValues) {
        if (Object.keys(body as object).some((key) => findField(route.method.input, key) === field)) {
          throw invalidParameter(`${field.name}: given in the path and in the body; send it in the path only`);
        }
        const text = decodeComponent(sent);
        if (text === undefined) throw invalidParameter(`${field.name}: not percent-encoded UTF-8 in the path`);
        (request as Record<string, unknown>)[field.localName] = readScalar(field.scalar!, text, field.name, true);
      }
      if (query !== "") {
        applyQuery(route.method, request as Record<string, unknown>, query, route.body === "*", pathValues.map(([field]) => field.localName));
      }
    } catch (error) {
      if (error instanceof AppError) return writeCallError(res, log, call, error);
      throw error;
    }
    if (route.method.methodKind === "server_streaming") {
      return this.stream(res, route.method, log, call, call.stream(request), recordFormatOf(request as Record<string, unknown>), req.method === "HEAD");
    }
    let response;
    try {
      response = await call.unary(request);
    } catch (error) {
      return writeCallError(res, log, call, error);
    }
    call.responseHeader.forEach((value, name) => res.setHeader(name, value));
    writeSuccess(res, log.requestId, await messageToRestJsonInTurns(route.method.output, response as unknown as Record<string, unknown>));
  }

  /**
   * A stream's records as one chunked body, written as fast as the caller reads it (the next message
   * is asked for only when the connection has taken the last). An error before the first message is
   * the usual error envelope; after it, the status is sent already: the body is cut off (no final
   * chunk on HTTP/1.1, RST_STREAM on HTTP/2), which every client reports as an incomplete transfer.
   */
  private async stream(res: HttpResponse, method: DescMethodServerStreaming, log: CallLog, call: LocalCall, messages: AsyncGenerator<Message>,
    format: RecordFormat, headOnly: boolean): Promise<void> {
    let first: IteratorResult<Message>;
    try {
      first = await messages.next();
    } catch (error) {
      return writeCallError(res, log, call, error);
    }
    const field = recordsField(method.output);
    const encoder = recordEncoder(field.message, format);
    const recordsOf = (message: Message) => ((message as unknown as Record<string, unknown>)[field.localName] ?? []) as Record<string, unknown>[];
    async function* body() {
      yield encoder.header;
      if (first.done) return;
      yield encoder.encode(recordsOf(first.value));
      for await (const message of messages) yield encoder.encode(recordsOf(message));
    }
    call.responseHeader.forEach((value, name) => res.setHeader(name, value));
    res.statusCode = 200;
    res.setHeader("content-type", CONTENT_TYPES[format]);
    const compressing = streamEncoder(res);
    if (headOnly) { // the GET's status and headers (its encoding's too), its first message made, the rest of its body (a year's export) not
      compressing.destroy();
      await messages.return(undefined);
      res.end();
      return;
    }
    // The status goes out now, with the first message, as said above: else a failure of the next message could come before any of the
    // body had been written, and the connection ended with no answer at all.
    if (res instanceof Http2ServerResponse) res.writeHead(200);
    else res.flushHeaders();
    await pipeStreams(Readable.from(body(), { objectMode: false }), compressing, res).catch((error: unknown) => {
      // The chain's log already holds a handler's error (its code); a write to a caller gone is no fault.
      if (log.code === undefined && !res.destroyed) {
        log.code = ErrorCode.INTERNAL;
        log.cause = error;
      }
      res.destroy();
    });
  }

  private fail(res: HttpResponse, log: CallLog, error: AppError, headers: Record<string, string> = {}): void {
    log.code = error.code;
    writeError(res, log.requestId, error, headers);
  }
}

/** A failed call's error envelope: the chain's ConnectError (already in the log), or a local error, recorded now. */
function writeCallError(res: HttpResponse, log: CallLog, call: LocalCall, error: unknown): void {
  writeError(res, log.requestId, appErrorOf(call.failure(error)));
}

/**
 * Reads a JSON body: 415 unless application/json and not encoded (Content-Encoding absent or
 * identity: a compressed body would be read as bytes of JSON), 413 past 1 MiB, 4001 unless a JSON
 * object, nested deeper than MAX_JSON_DEPTH or with a key twice. Invalid UTF-8 is kept (see
 * utf8-body.ts) for the request check to refuse by field.
 */
export async function readJsonBody(req: HttpRequest): Promise<unknown> {
  const type = req.headers["content-type"];
  if (!type || !JSON_CONTENT_TYPE.test(type)) {
    req.resume();
    throw new AppError(ErrorCode.UNSUPPORTED_MEDIA_TYPE, `Content-Type must be application/json (got ${type ? JSON.stringify(type) : "none"})`);
  }
  if (contentCoding(req.headers["content-encoding"]) !== "identity") {
    req.resume();
    throw new AppError(ErrorCode.UNSUPPORTED_MEDIA_TYPE, `Content-Encoding ${JSON.stringify(req.headers["content-encoding"])} is not accepted: send the JSON body uncompressed`);
  }
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > MAX_BODY_BYTES) {
    req.resume();
    throw bodyTooLarge(MAX_BODY_BYTES);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      req.resume();
      throw bodyTooLarge(MAX_BODY_BYTES);
    }
    chunks.push(chunk);
  }
  return parseJsonBody(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
}

/**
 * AIP-134 partial update over REST: when a PATCH request message has a FieldMask `update_mask` and the
 * body does not send one, the mask is the body's own fields (the fields present are the ones updated).
 * A `null` is a field not set (api-rules.md), so not in the mask: a client that sends its unset fields
 * as null must not empty them.
 */
function inferUpdateMask(method: ServedMethod, request: Record<string, unknown>, body: unknown): void {
  const maskField = findField(method.input, "update_mask");
  if (!maskField || maskField.fieldKind !== "message" || maskField.message.typeName !== "google.protobuf.FieldMask") return;
  const sent = Object.entries(body as object).filter(([, value]) => value !== null).map(([key]) => key);
  if (sent.some((key) => findField(method.input, key) === maskField)) return;
  const paths = sent.map((key) => findField(method.input, key)!.name);
  request[maskField.localName] = create(FieldMaskSchema, { paths });
}

/**
 * Query parameters fill top-level scalar (or repeated scalar) fields; unknown names are rejected, and
 * so is a scalar field given twice, in the query or also by the path (`fromPath`: a proxy that checks
 * one of two values must not be outwitted).
 */
function applyQuery(method: ServedMethod, request: Record<string, unknown>, query: string, hasBody: boolean, fromPath: readonly string[]): void {
  const given = new Set<string>(fromPath);
  for (const [key, value] of queryPairs(query)) {
    const field = findField(method.input, key);
    if (!field || hasBody) throw invalidParameter(`${key || '""'}: unknown query parameter`);
    const integerAsString = acceptsInteger(field);
    if (field.fieldKind === "scalar" && given.has(field.localName)) throw invalidParameter(`${key}: given twice; send it once`);
    given.add(field.localName);
    if (field.fieldKind === "scalar") request[field.localName] = readScalar(field.scalar, value, key, integerAsString);
    else if (field.fieldKind === "list" && field.listKind === "scalar") {
      (request[field.localName] as unknown[]).push(readScalar(field.scalar, value, key, integerAsString));
    } else throw invalidParameter(`${key}: cannot be given as a query parameter`);
  }
}

/**
 * The query's name=value pairs, decoded ("+" is a space), empty ones skipped. A bad %-escape (%ff) is 4001 naming the parameter, as
 * invalid UTF-8 in a body is (URLSearchParams would read it as U+FFFD).
 */
function queryPairs(query: string): Array<[name: string, value: string]> {
  return query.split("&").filter((pair) => pair !== "").map((pair) => {
    const equals = pair.indexOf("=");
    const [key, value] = equals < 0 ? [pair, ""] : [pair.slice(0, equals), pair.slice(equals + 1)];
    const name = decodeComponent(key.replaceAll("+", " "));
    if (name === undefined) throw invalidParameter("a query parameter's name: not percent-encoded UTF-8");
    const text = decodeComponent(value.replaceAll("+", " "));
    if (text === undefined) throw invalidParameter(`${name}: not percent-encoded UTF-8 in the query`);
    return [name, text];
  });
}

/** A streamed route's format: the request's `format` field when it has one, else CSV. */
function recordFormatOf(request: Record<string, unknown>): RecordFormat {
  const format = request.format;
  return typeof format === "string" && (RECORD_FORMATS as readonly string[]).includes(format) ? format as RecordFormat : "csv";
}

