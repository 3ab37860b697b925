// A report's counts are uint64 in the API: a sum over members past 2^64 - 1 (two members at 10^19
// tokens each: every member's own total is held within the limit, not the enterprise's) is a 4001
// naming the field, not a failure to encode the answer (gRPC and Connect binary answered "internal").
import { describe, expect, it } from "vitest";
import { AppError, ErrorCode } from "../../src/domain/errors.js";
import { answerCount } from "../../src/domain/usage-totals.js";

describe("answerCount", () => {
  it("answers counts up to 2^64 - 1 exactly, numbers and bigints alike", () => {
    expect(answerCount(0, "events")).toBe(0n);
    expect(answerCount(2 ** 53, "input_tokens")).toBe(9007199254740992n);
    expect(answerCount(2n ** 64n - 1n, "input_tokens")).toBe(18446744073709551615n);
  });

  it("refuses 2^64 and past with 4001 naming the field, the sum and the limit", () => {
    const error = (() => {
      try {
        answerCount(20_000_000_000_000_000_000n, "input_tokens");
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe(ErrorCode.INVALID_PARAMETER);
    expect((error as AppError).message).toBe("input_tokens: the sum 20000000000000000000 is past 18446744073709551615, the largest an answer holds; " +
      "ask for shorter buckets or group by member");
    expect(() => answerCount(2n ** 64n, "output_tokens")).toThrow("output_tokens: the sum 18446744073709551616");
  });
});
