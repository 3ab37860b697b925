// Where a JSON text is broken, as a line and column and the kind of error, without quoting the text
// (Node 20's JSON.parse message has no position and quotes the text, which may hold a secret).
import { parse as parseLenient, printParseErrorCode, type ParseError } from "jsonc-parser";

export function describeJsonError(text: string, error: unknown): string {
  const errors: ParseError[] = [];
  parseLenient(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  const first = errors[0];
  if (!first) return error instanceof SyntaxError ? "syntax error" : "unreadable";
  const before = text.slice(0, first.offset);
  const line = before.split("\n").length;
  const column = before.length - before.lastIndexOf("\n");
  // One line (an NDJSON line, named by its caller): its column alone, not a "line 1" beside the file's line.
  return `${text.includes("\n") ? `line ${line}, ` : ""}column ${column}: ${printParseErrorCode(first.error)}`;
}
