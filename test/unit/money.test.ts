import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { formatMicros, parseMicros } from "../../src/domain/money.js";

describe("money", () => {
  it("prints micro-units with exactly 6 decimals, the same from a number as from a bigint", () => {
    expect(formatMicros(0)).toBe("0.000000");
    expect(formatMicros(12_345_600)).toBe("12.345600");
    expect(formatMicros(-5)).toBe("-0.000005");
    expect(formatMicros(Number.MAX_SAFE_INTEGER)).toBe("9007199254.740991");
    fc.assert(fc.property(fc.integer({ min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }), (n) => {
      expect(formatMicros(n)).toBe(formatMicros(BigInt(n)));
    }), { numRuns: 2000 });
  });

  it("reads back what it prints, past 2^53 too", () => {
    fc.assert(fc.property(fc.bigInt({ min: 0n, max: 10n ** 24n - 1n }), (micros) => {
      expect(parseMicros(formatMicros(micros))).toBe(micros);
    }), { numRuns: 1000 });
  });
});
