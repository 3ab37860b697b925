// The lines of an NDJSON usage file: split from its bytes, and each parsed and checked as an event.
import { StringDecoder } from "node:string_decoder";
import { describeJsonError } from "../domain/json-errors.js";
import { invalidParameter } from "../domain/errors.js";
import { checkUsageEvent, type UsageEventInput } from "../domain/usage-event.js";

const OPEN_BRACE = 123;

/** One line's event, checked, or undefined for a blank line; `where` names the line in errors (AppErrors of code INVALID_PARAMETER). */
export function parseUsageLine(line: string, where: string): UsageEventInput | undefined {
  // A line that opens an object is not blank: most lines skip the trim.
  if (line.charCodeAt(0) !== OPEN_BRACE && line.trim() === "") return undefined;
  const canonical = CANONICAL_EVENT.exec(line);
  if (canonical) {
    const [, eventId, userId, modelName, modelType, modelSource, timestamp, inputTokens, outputTokens, basicAmount, payGoAmount] = canonical;
    return checkUsageEvent({
      event_id: eventId, user_id: userId, model_name: modelName, model_type: modelType, model_source: modelSource, timestamp: Number(timestamp),
      input_tokens: Number(inputTokens), output_tokens: Number(outputTokens), basic_amount: basicAmount, pay_go_amount: payGoAmount,
    }, where);
  }
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch (error) {
    throw invalidParameter(`${where}: not valid JSON (${describeJsonError(line, error)})`);
  }
  if (json === null || typeof json !== "object" || Array.isArray(json)) throw invalidParameter(`${where}: expected a JSON object`);
  return checkUsageEvent(json, where);
}

/** A JSON string without escapes (no `"`, backslash or control character): its text is its value. */
const PLAIN_STRING = String.raw`"([^"\\\u0000-\u001f]*)"`;
/** A JSON integer (no fraction or exponent): Number() of its text is what JSON.parse makes of it. */
const INTEGER = "(-?(?:0|[1-9][0-9]*))";
/** A line as exporters write it (fields in docs/file-formats.md order, no spaces, plain strings, integers): JSON.parse's values, 3x cheaper. */
const CANONICAL_EVENT = new RegExp(`^\\{"event_id":${PLAIN_STRING},"user_id":${PLAIN_STRING},"model_name":${PLAIN_STRING},` +
  `"model_type":${PLAIN_STRING},"model_source":${PLAIN_STRING},"timestamp":${INTEGER},"input_tokens":${INTEGER},` +
  `"output_tokens":${INTEGER},"basic_amount":${PLAIN_STRING},"pay_go_amount":${PLAIN_STRING}\\}$`);

/** A UTF-8 byte stream's lines, one array per read ("\n" or "\r\n" ends one; an unended last line counts); split by hand, cheaper than readline. */
export async function* lineBatches(stream: AsyncIterable<Buffer>): AsyncGenerator<string[]> {
  const decoder = new StringDecoder("utf8");
  let carry = "";
  for await (const bytes of stream) {
    const text = carry + decoder.write(bytes);
    const batch: string[] = [];
    let start = 0;
    for (let end = text.indexOf("\n"); end !== -1; end = text.indexOf("\n", start)) {
      batch.push(text.charCodeAt(end - 1) === 13 && end > start ? text.slice(start, end - 1) : text.slice(start, end));
      start = end + 1;
    }
    carry = text.slice(start);
    yield batch;
  }
  const rest = carry + decoder.end();
  if (rest !== "") yield [rest.endsWith("\r") ? rest.slice(0, -1) : rest];
}
