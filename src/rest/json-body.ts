// A request body's JSON (REST, Connect JSON): the bytes decoded without repair, then read exactly.
import { AppError, invalidParameter } from "../domain/errors.js";
import { parseJsonExact } from "../domain/exact-json.js";
import { describeJsonError } from "../domain/json-errors.js";
import { decodeUtf8Body } from "./utf8-body.js";

/** A request body's JSON (REST, Connect JSON): UTF-8, not empty, read by parseJsonExact; refused as 4001 naming the place, never quoting the text. */
export function parseJsonBody(bytes: Buffer): unknown {
  const text = decodeUtf8Body(bytes);
  if (text.trim() === "") throw invalidParameter("body: expected a JSON object, got an empty body");
  try {
    return parseJsonExact(text);
  } catch (error) {
    if (error instanceof AppError) throw error;
    // The parser's own message quotes the text around the error, which may be a secret: give the place only.
    throw invalidParameter(`body: not valid JSON (${describeJsonError(text, error)})`);
  }
}
