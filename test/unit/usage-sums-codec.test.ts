import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { SUM_LIMIT, SumLimitError } from "../../src/domain/usage-totals.js";
import { CorruptTotalsError, VarintReader, readBigVarint, writeVarint } from "../../src/storage/usage-sums-codec.js";
import { decodePacked, packedOf, packedOnto, plainTotals as plain, totalsOf } from "../helpers/packed-totals.js";

/** Whether a model's sum, or a sum over all the models, passes 2^64 - 1 (what packTotals refuses). */
const passesLimit = (models: bigint[][]) => models.some((sums) => sums.some((s) => s > SUM_LIMIT))
  || [0, 1, 2, 3, 4].some((i) => models.reduce((sum, sums) => sum + sums[i]!, 0n) > SUM_LIMIT);

describe("packed usage totals", () => {
  it("round-trips any sums up to 2^64 - 1 exactly, whether they were added as numbers or bigints", () => {
    const value = fc.oneof(fc.integer({ min: 0, max: 1_000_000_000_000 }), fc.bigInt({ min: 0n, max: SUM_LIMIT / 4n }));
    const event = fc.tuple(fc.integer({ min: 1, max: 2 ** 32 - 1 }), value, value, value, value);
    fc.assert(fc.property(fc.array(event, { maxLength: 30 }), (events) => {
      const totals = totalsOf(events);
      const reference = new Map<number, bigint[]>();
      for (const [model, ...values] of events) {
        const sums = reference.get(model) ?? [0n, 0n, 0n, 0n, 0n];
        reference.set(model, sums.map((s, i) => s + (i === 4 ? 1n : BigInt(values[i]!))));
      }
      if (passesLimit([...reference.values()])) {
        expect(() => packedOf(totals)).toThrow(SumLimitError);
        return;
      }
      expect(decodePacked(packedOf(totals))).toStrictEqual(Object.fromEntries([...reference].sort((a, b) => a[0] - b[0])));
    }), { numRuns: 500 });
  });

  it("adds held totals onto packed ones, carrying past 2^53 into bigints", () => {
    const stored = totalsOf([[7, 2n ** 53n - 1n, 1, 0, 5]]);
    const batch = totalsOf([[7, 2, 2, 3, 0], [9, 1, 0, 0, 0]]);
    expect(decodePacked(packedOnto(batch, packedOf(stored)))).toStrictEqual({ 7: [2n ** 53n + 1n, 3n, 3n, 5n, 2n], 9: [1n, 0n, 0n, 0n, 1n] });
  });

  it("packs a sum of exactly 2^64 - 1, refuses one past it, and keeps small sums small (a few bytes a model)", () => {
    // 2^64 - 1 = 2048 * (2^53 - 1) + 2047: events of the largest exact number reach the limit in 2,049 additions.
    const largest = Array.from({ length: 2048 }, () => [1, Number.MAX_SAFE_INTEGER, 0, 0, 0] as const);
    expect(decodePacked(packedOf(totalsOf([...largest, [1, 2047, 0, 0, 0]])))).toStrictEqual({ 1: [SUM_LIMIT, 0n, 0n, 0n, 2049n] });
    expect(() => packedOf(totalsOf([...largest, [1, 2048, 0, 0, 0]]))).toThrow(SumLimitError);
    const stored = packedOf(totalsOf([...largest, [1, 2046, 0, 0, 0]]));
    expect(decodePacked(packedOnto(totalsOf([[1, 1, 0, 0, 0]]), stored))).toStrictEqual({ 1: [SUM_LIMIT, 0n, 0n, 0n, 2050n] });
    expect(() => packedOnto(totalsOf([[1, 2, 0, 0, 0]]), stored)).toThrow(SumLimitError);
    const over = totalsOf([[1, SUM_LIMIT, 0, 0, 0], [1, 1, 0, 0, 0]]);
    expect(() => packedOf(over)).toThrow(SumLimitError);
    const small = totalsOf([[3, 5000, 1200, 15000, 0]]);
    expect(packedOf(small)).toHaveLength(1 + 2 + 2 + 2 + 1 + 1); // 5000, 1200 and 15000 take two bytes each
  });

  it("packs held totals onto packed ones: shared models added, every other one kept, exact up to 2^64 - 1", () => {
    const value = fc.oneof(fc.integer({ min: 0, max: 1_000_000_000_000 }), fc.bigInt({ min: 0n, max: SUM_LIMIT / 4n }));
    const event = fc.tuple(fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constant(2 ** 31 - 1)), value, value, value, value);
    fc.assert(fc.property(fc.array(event, { maxLength: 25 }), fc.array(event, { maxLength: 10 }), (stored, added) => {
      const before = totalsOf(stored);
      const everything = totalsOf([...stored, ...added]);
      let merged: Uint8Array;
      try {
        merged = packedOnto(totalsOf(added), packedOf(before));
      } catch (error) {
        expect(error).toBeInstanceOf(SumLimitError);
        expect(passesLimit(Object.values(plain(everything)))).toBe(true);
        return;
      }
      expect(decodePacked(merged)).toStrictEqual(plain(everything));
    }), { numRuns: 500 });
  });

  it("refuses totals whose sum over all models passes 2^64 - 1, each model's within it, held or stored", () => {
    const half = SUM_LIMIT / 2n; // 2^63 - 1
    expect(decodePacked(packedOf(totalsOf([[1, half, 0, 0, 0], [2, half + 1n, 0, 0, 0]])))).toStrictEqual({ 1: [half, 0n, 0n, 0n, 1n], 2: [half + 1n, 0n, 0n, 0n, 1n] });
    expect(() => packedOf(totalsOf([[1, half, 0, 0, 0], [2, half + 2n, 0, 0, 0]]))).toThrow(SumLimitError);
    const stored = packedOf(totalsOf([[1, 0, half, 0, 0], [2, 0, half, 0, 0]]));
    expect(() => packedOnto(totalsOf([[3, 0, 1, 0, 0]]), stored)).not.toThrow();
    expect(() => packedOnto(totalsOf([[3, 0, 2, 0, 0]]), stored)).toThrow(SumLimitError);
    expect(() => packedOnto(totalsOf([[2, 0, 2, 0, 0]]), stored)).toThrow(SumLimitError);
  });

  it("refuses packed totals that end inside an entry", () => {
    const stored = totalsOf([[3, 5000, 1200, 15000, 0], [4, 1, 1, 1, 1]]);
    const packed = packedOf(stored);
    for (const corrupt of [packed.slice(0, -1), Uint8Array.of(...packed.slice(0, -1), 0x80)]) {
      expect(() => packedOnto(totalsOf([[3, 1, 1, 1, 1]]), corrupt)).toThrow(CorruptTotalsError);
    }
  });
});

describe("varints", () => {
  it("write and read back every integer below 2^53, the bytes LEB128's", () => {
    const value = fc.oneof(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 2 ** 31 - 300, max: 2 ** 31 + 300 }),
      fc.integer({ min: 0, max: 2 ** 31 + 2 ** 30 }), fc.maxSafeNat(), fc.constant(Number.MAX_SAFE_INTEGER), fc.constant(2 ** 28), fc.constant(2 ** 35));
    fc.assert(fc.property(value, (n) => {
      const out = new Uint8Array(10);
      const end = writeVarint(out, 1, n);
      const reader = new VarintReader(out, 1);
      expect(reader.next()).toBe(n);
      expect(reader.at).toBe(end);
      expect(readBigVarint(out, 1)).toBe(BigInt(n));
      // LEB128: seven bits a byte, low first, the high bit set on every byte but the last.
      let rest = BigInt(n);
      const expected: number[] = [];
      do {
        const low = Number(rest & 0x7fn);
        rest >>= 7n;
        expected.push(rest > 0n ? low | 0x80 : low);
      } while (rest > 0n);
      expect([...out.subarray(1, end)]).toStrictEqual(expected);
    }), { numRuns: 2000 });
  });
});
