// Opaque page tokens (AIP-158): base64url of the last key seen and a fingerprint of the query, so a
// token of another query is refused. They are not signed: anyone can make one by hand, so the key
// carried is checked like any input where it is used, and it only says where the caller's own list
// goes on (every query still filters by the caller's enterprise).
import { createHash } from "node:crypto";
import { invalidParameter } from "./errors.js";
import { textProblem } from "./text-rules.js";

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 100;

/** 0 means the default; above the maximum is lowered to it (negative sizes are rejected by validation). */
export function effectivePageSize(requested: number, limits = { default: DEFAULT_PAGE_SIZE, max: MAX_PAGE_SIZE }): number {
  if (requested <= 0) return limits.default;
  return Math.min(requested, limits.max);
}

const fingerprint = (query: string) => createHash("sha256").update(query).digest("base64url").slice(0, 12);

export function encodePageToken(query: string, after: string): string {
  return Buffer.from(JSON.stringify({ q: fingerprint(query), a: after }), "utf8").toString("base64url");
}

/** Returns the key to continue after, or undefined for the first page. */
export function decodePageToken(query: string, token: string): string | undefined {
  if (token === "") return undefined;
  try {
    const parsed = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
    // A token made by hand may carry text no database can compare (U+0000 on PostgreSQL).
    if (parsed && parsed.q === fingerprint(query) && typeof parsed.a === "string" && textProblem(parsed.a) === undefined) return parsed.a;
  } catch {
    // fall through to the error below
  }
  throw invalidParameter("page_token: not a token returned by this query");
}
