// The Vary header, built up by each layer whose answer depends on a request header.
import type { HttpResponse } from "../rest/envelope.js";

/** Adds `field` to the response's Vary header, once. */
export function addVary(res: HttpResponse, field: string): void {
  const current = res.getHeader("vary");
  const fields = current === undefined ? [] : String(current).split(",").map((f) => f.trim()).filter((f) => f !== "");
  if (fields.some((f) => f === "*" || f.toLowerCase() === field.toLowerCase())) return;
  res.setHeader("vary", [...fields, field].join(", "));
}
