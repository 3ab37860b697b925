// gzip for the bodies this server writes itself (REST envelopes, Connect unary JSON answers, the export
// stream, /openapi.json, the console, /metrics) when the caller's Accept-Encoding takes gzip. connect-es
// compresses the messages of the Connect adapter's calls itself, by the same threshold (app.ts).
import { PassThrough, type Transform } from "node:stream";
import { constants, createGzip, gzip } from "node:zlib";
import type { HttpResponse } from "../rest/envelope.js";
import { addVary } from "./vary.js";

/** A whole body up to this size goes as it is: gzip would save a few bytes for a round of CPU. */
export const COMPRESS_MIN_BYTES = 1024;

/** A request's content coding as named by its Content-Encoding (or gRPC's and Connect's own header): lower case, `identity` when absent or empty. */
export function contentCoding(header: string | null | undefined): string {
  return header?.trim().toLowerCase() || "identity";
}

/**
 * Whether an Accept-Encoding value takes gzip: `gzip` (or `x-gzip`) with a q-value above 0, or, when
 * gzip is not named, `*` with one. No header means identity only.
 */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  const value = Array.isArray(header) ? header.join(",") : header ?? "";
  let gzipQ: number | undefined;
  let anyQ: number | undefined;
  for (const part of value.split(",")) {
    const [coding = "", ...params] = part.split(";").map((s) => s.trim());
    const qParam = params.find((p) => /^q=/i.test(p));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    const name = coding.toLowerCase();
    if (name === "gzip" || name === "x-gzip") gzipQ = Math.max(gzipQ ?? 0, q);
    else if (name === "*") anyQ = q;
  }
  return (gzipQ ?? anyQ ?? 0) > 0; // NaN (a malformed q) is not above 0
}

/**
 * Ends the response (its status and other headers set already) with `body`, gzipped when it is over
 * COMPRESS_MIN_BYTES and the caller accepts gzip. gzip runs on libuv's thread pool, not the event loop.
 */
export function endWithBody(res: HttpResponse, body: string | Buffer): void {
  addVary(res, "Accept-Encoding");
  const length = typeof body === "string" ? Buffer.byteLength(body) : body.length;
  // A body sent as it is goes as given: Node writes a string body in one write with the headers.
  if (length <= COMPRESS_MIN_BYTES || !acceptsGzip(res.req.headers["accept-encoding"])) return endAs(res, body, length);
  gzip(body, (error, zipped) => {
    if (res.writableEnded || res.destroyed) return; // the caller went away meanwhile
    if (error) return endAs(res, body, length);
    res.setHeader("content-encoding", "gzip");
    endAs(res, zipped, zipped.length);
  });
}

function endAs(res: HttpResponse, body: string | Buffer, length: number): void {
  res.setHeader("content-length", length);
  res.end(body); // Node sends no body for HEAD
}

/**
 * The encoder a streamed body (its size unknown when the headers go) is piped through before the
 * response: gzip whenever the caller accepts it, flushed at each write so that every batch of
 * records reaches the caller as it is made; else a pass-through.
 */
export function streamEncoder(res: HttpResponse): Transform {
  addVary(res, "Accept-Encoding");
  if (!acceptsGzip(res.req.headers["accept-encoding"])) return new PassThrough();
  res.setHeader("content-encoding", "gzip");
  return createGzip({ flush: constants.Z_SYNC_FLUSH });
}
