import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { parseJsonExact } from "../../src/domain/exact-json.js";
import { messageFromRestJson, messageToRestJson, messageToRestJsonInTurns } from "../../src/rest/rest-json.js";
import { GetUsageReportResponseSchema } from "../../gen/enterprise_admin/v1/usage_pb.js";
import { DepartmentSchema, BatchGetDepartmentsRequestSchema } from "../../gen/enterprise_admin/v1/department_pb.js";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { EnvelopeSchema } from "../../gen/enterprise_admin/v1/errors_pb.js";
import { CreateAccessTokenResponseSchema } from "../../gen/enterprise_admin/v1/auth_pb.js";
import { ErrorCode } from "../../src/domain/errors.js";
import { AppError } from "../../src/domain/errors.js";

describe("exact JSON numbers", () => {
  it("keeps every digit of integers beyond 2^53 by reading them as marked digit strings", () => {
    expect(parseJsonExact('{"a":9007199254740993,"b":[1,-12345678901234567890],"c":"9007199254740993x","d":1.5e3}'))
      .toEqual({ a: "\u00009007199254740993", b: [1, "\u0000-12345678901234567890"], c: "9007199254740993x", d: 1500 });
  });

  it("leaves digits inside strings, escaped quotes included, untouched", () => {
    expect(parseJsonExact('{"s":"say \\"12345678901234567\\"","n":12345678901234567}'))
      .toEqual({ s: 'say "12345678901234567"', n: "\u000012345678901234567" });
  });

  it("a long number is an integer, never a string, unless the field takes integers as strings", () => {
    const body = parseJsonExact('{"department_ids":[9123456789012345]}');
    expect(() => messageFromRestJson(BatchGetDepartmentsRequestSchema, body)).toThrow("department_ids[0]: expected a string");
    expect(messageFromRestJson(CreateAccessTokenResponseSchema, parseJsonExact('{"expire":"7200"}')).expire).toBe(7200);
  });
});

describe("REST JSON of messages", () => {
  it("prints every field with its zero value, in proto field names", () => {
    expect(messageToRestJson(DepartmentSchema, { departmentId: "100" }))
      .toBe('{"department_id":"100","parent_department_id":"","name":"","full_path":"","depth":0}');
  });

  it("prints 64-bit integers as exact JSON numbers", () => {
    const json = messageToRestJson(EnvelopeSchema, { code: 0, message: "success", requestId: "r" });
    expect(json).toBe('{"code":0,"message":"success","request_id":"r","data":null}');
    expect(messageToRestJson(ValueSchema, create(ValueSchema, { kind: { case: "numberValue", value: 1 } }))).toBe("1");
  });

  it("writes a long answer in turns, giving the event loop turns between its groups, the same text", async () => {
    const report = create(GetUsageReportResponseSchema, {
      currency: "CNY", timeZone: "Asia/Kolkata", nextPageToken: "t", notFoundEmails: ["x@example.com"],
      buckets: Array.from({ length: 3 }, (_, b) => ({ startTime: BigInt(b * 3600), endTime: BigInt(b * 3600 + 3600), date: "",
        groups: Array.from({ length: 4 }, (_, g) => ({ modelName: `m${g}`, events: BigInt(g), inputTokens: 2n ** 63n + BigInt(g), totalAmount: "0.000001" })) })),
    });
    // Another task of the event loop, counting the turns it gets while the text is written.
    let turns = 0;
    let writing = true;
    const other = () => {
      turns++;
      if (writing) setImmediate(other);
    };
    setImmediate(other);
    // A turn long gone: the writer gives one after every group.
    const text = await messageToRestJsonInTurns(GetUsageReportResponseSchema, report, 2, { since: -Infinity });
    writing = false;
    expect(text).toBe(messageToRestJson(GetUsageReportResponseSchema, report));
    expect(turns).toBeGreaterThan(0);
  });

  it("reads a request and rejects an unknown field by name", () => {
    const message = messageFromRestJson(BatchGetDepartmentsRequestSchema, { department_ids: ["1", "2"] });
    expect(message.departmentIds).toEqual(["1", "2"]);
    expect(() => messageFromRestJson(BatchGetDepartmentsRequestSchema, { department_ids: [], container_image: "x" }))
      .toThrow(new AppError(ErrorCode.INVALID_PARAMETER, "container_image: unknown field"));
  });

  it("names the field and the expected type for a wrong type", () => {
    expect(() => messageFromRestJson(BatchGetDepartmentsRequestSchema, { department_ids: "100" })).toThrow("department_ids: expected an array");
    expect(() => messageFromRestJson(BatchGetDepartmentsRequestSchema, { department_ids: [7] })).toThrow("department_ids[0]: expected a string");
    expect(() => messageFromRestJson(CreateAccessTokenResponseSchema, { expire: 1.5 })).toThrow("expire: expected an integer");
    expect(() => messageFromRestJson(CreateAccessTokenResponseSchema, { expire: 2 ** 31 })).toThrow("expire: 2147483648 is out of range");
  });

  it("accepts a numeric string for an integer field", () => {
    expect(messageFromRestJson(CreateAccessTokenResponseSchema, { expire: "7200" }).expire).toBe(7200);
  });
});

describe("JSON shape checks before any walk", () => {
  it("names a key given twice by its path", () => {
    expect(() => parseJsonExact('{"a":[{"b":1},{"c":1,"c":2}]}')).toThrow(new AppError(ErrorCode.INVALID_PARAMETER, "a[1].c: given twice; send it once"));
    expect(() => parseJsonExact('{"a":1,"\\u0061":2}')).toThrow("a: given twice; send it once");
    expect(parseJsonExact('{"a":{"a":1},"b":[{"a":1},{"a":2}]}')).toEqual({ a: { a: 1 }, b: [{ a: 1 }, { a: 2 }] });
  });

  it("counts only brackets outside strings toward the 64-level limit", () => {
    expect(parseJsonExact(`{"s":"${"[".repeat(100)}"}`)).toEqual({ s: "[".repeat(100) });
    expect(() => parseJsonExact("[".repeat(65) + "]".repeat(65))).toThrow("body: JSON nested deeper than 64 levels");
  });

  it("marks a caller's string holding U+0000 so it never reads as a long number; an escaped backslash is no NUL", () => {
    expect(parseJsonExact('{"n":"\\u00001234567890123456"}')).toEqual({ n: "\u0000\u00001234567890123456" });
    expect(parseJsonExact('{"s":"\\\\u0000"}')).toEqual({ s: "\\u0000" });
  });

  it("leaves keys, and strings holding U+0000 past their start, as sent", () => {
    expect(parseJsonExact('{"a\\u0000b":"x\\u0000y","\\u0000k":["\\u0000v"]}')).toEqual({ "a\u0000b": "x\u0000y", "\u0000k": ["\u0000\u0000v"] });
  });
});
