// An event line read by the canonical expression gives exactly what JSON.parse and the event check give.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkUsageEvent } from "../../src/domain/usage-event.js";
import { parseUsageLine } from "../../src/operations/usage-file-lines.js";

/** The event of a line by JSON.parse alone, or its error message (a line JSON.parse refuses: that it is not JSON). */
function reference(line: string): unknown {
  let json;
  try {
    json = JSON.parse(line);
  } catch {
    return expect.stringMatching(/^line 7: not valid JSON \(/);
  }
  try {
    return checkUsageEvent(json, "line 7");
  } catch (error) {
    return (error as Error).message;
  }
}

function read(line: string): unknown {
  try {
    return parseUsageLine(line, "line 7");
  } catch (error) {
    return (error as Error).message;
  }
}

const text = fc.oneof(fc.string({ unit: "grapheme", maxLength: 12 }), fc.string({ unit: "binary", maxLength: 12 }),
  fc.constantFrom("7001", "Chat", "Builtin", "Custom", "a\"b", "a\\b", "tab\there", "\u0000", "é😀", ""));
const integer = fc.oneof(fc.integer({ min: -5, max: 5 }), fc.maxSafeInteger(), fc.constantFrom(1e12, 1e12 + 1, 2 ** 53 + 1, 1e21, -0));
const amount = fc.oneof(fc.constantFrom("0", "0.5", "1.000001", "0.0000001", "-1", "1e3", " 1", "1000000.000000", "1000000.000001"), text);

describe("usage file lines", () => {
  it("a canonical line (every field, in order, no spaces) reads as JSON.parse reads it, errors included", () => {
    fc.assert(fc.property(fc.record({
      event_id: text, user_id: text, model_name: text, model_type: fc.oneof(fc.constantFrom("Chat", "CUE"), text),
      model_source: fc.oneof(fc.constantFrom("Builtin", "Custom"), text), timestamp: integer, input_tokens: integer, output_tokens: integer,
      basic_amount: amount, pay_go_amount: amount,
    }), (event) => {
      const line = JSON.stringify(event); // the canonical key order: the record's
      expect(read(line)).toEqual(reference(line));
    }), { numRuns: 3000 });
  });

  it.each([
    ["a fraction", '{"event_id":"e","user_id":"7001","model_name":"m","model_type":"Chat","model_source":"Builtin","timestamp":1.5,"input_tokens":1,"output_tokens":2,"basic_amount":"0","pay_go_amount":"0"}'],
    ["an exponent", '{"event_id":"e","user_id":"7001","model_name":"m","model_type":"Chat","model_source":"Builtin","timestamp":1e9,"input_tokens":1,"output_tokens":2,"basic_amount":"0","pay_go_amount":"0"}'],
    ["a leading zero", '{"event_id":"e","user_id":"7001","model_name":"m","model_type":"Chat","model_source":"Builtin","timestamp":01,"input_tokens":1,"output_tokens":2,"basic_amount":"0","pay_go_amount":"0"}'],
    ["spaces", '{"event_id": "e","user_id":"7001","model_name":"m","model_type":"Chat","model_source":"Builtin","timestamp":1,"input_tokens":1,"output_tokens":2,"basic_amount":"0","pay_go_amount":"0"}'],
    ["another order", '{"user_id":"7001","event_id":"e","model_name":"m","model_type":"Chat","model_source":"Builtin","timestamp":1,"input_tokens":1,"output_tokens":2,"basic_amount":"0","pay_go_amount":"0"}'],
    ["a field left out", '{"event_id":"e","user_id":"7001","model_name":"m","model_type":"Chat","model_source":"Builtin","timestamp":1,"input_tokens":1,"output_tokens":2,"basic_amount":"0"}'],
    ["an extra field", '{"event_id":"e","user_id":"7001","model_name":"m","model_type":"Chat","model_source":"Builtin","timestamp":1,"input_tokens":1,"output_tokens":2,"basic_amount":"0","pay_go_amount":"0","x":1}'],
    ["an escaped string", '{"event_id":"e\\u0041","user_id":"7001","model_name":"m","model_type":"Chat","model_source":"Builtin","timestamp":1,"input_tokens":1,"output_tokens":2,"basic_amount":"0","pay_go_amount":"0"}'],
    ["a number for a string", '{"event_id":"e","user_id":7001,"model_name":"m","model_type":"Chat","model_source":"Builtin","timestamp":1,"input_tokens":1,"output_tokens":2,"basic_amount":"0","pay_go_amount":"0"}'],
    ["broken JSON", '{"event_id":"e","user_id":"7001",'],
  ])("any other line (%s) reads as JSON.parse reads it", (_name, line) => {
    expect(read(line)).toEqual(reference(line));
  });
});
