// Request ids: a caller's own x-request-id is kept when it is a sane token, else a new one is made.
import { randomUUID } from "node:crypto";

/** A caller's id that is kept: 1 to 128 printable ASCII characters, no spaces. */
export const SANE_REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

export function resolveRequestId(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return value !== undefined && SANE_REQUEST_ID.test(value) ? value : randomUUID();
}
