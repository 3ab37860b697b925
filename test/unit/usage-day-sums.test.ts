import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { DaySums, FrameCursor } from "../../src/storage/usage-day-sums.js";
import { SumLimitError } from "../../src/domain/usage-totals.js";
import { plainPacked } from "../helpers/packed-totals.js";

/** Each frame of `frames` as [member, day, its sums as plain bigints by model]. */
function framesOf(frames: Uint8Array): Array<[number, number, Record<number, bigint[]>]> {
  const got: Array<[number, number, Record<number, bigint[]>]> = [];
  for (const cursor = new FrameCursor(frames); cursor.next();) got.push([cursor.member, cursor.day, plainPacked(frames, cursor.start, cursor.end)]);
  return got;
}

describe("day sums as frames", () => {
  it("carry every (member, day, model) sum exactly, one frame a (member, day) in member then day order", () => {
    const value = fc.integer({ min: 0, max: 1_000_000_000_000 });
    const member = fc.oneof(fc.nat(3), fc.constantFrom(70_000, 1 << 20));
    const event = fc.tuple(member, fc.nat(3), fc.integer({ min: 19_000, max: 19_010 }), value, value, value, value);
    fc.assert(fc.property(fc.array(event, { maxLength: 60 }), fc.integer({ min: 1, max: 20 }), (events, perMessage) => {
      const sums = new DaySums();
      const received = new Map<string, bigint[]>();
      const receive = () => {
        const frames = framesOf(sums.takeFrames());
        const keys = frames.map(([m, day]) => m * 2 ** 22 + day);
        expect(keys).toStrictEqual([...new Set(keys)].sort((a, b) => a - b));
        for (const [m, day, models] of frames) {
          for (const [model, values] of Object.entries(models)) {
            const key = `${m}:${day}:${model}`;
            received.set(key, values.map((v, i) => v + (received.get(key)?.[i] ?? 0n)));
          }
        }
      };
      const expected = new Map<string, bigint[]>();
      for (const [m, model, day, ...v] of events) {
        sums.add(m, model, day, v[0]!, v[1]!, v[2]!, v[3]!);
        const key = `${m}:${day}:${model}`;
        expected.set(key, [...v.map(BigInt), 1n].map((x, i) => x + (expected.get(key)?.[i] ?? 0n)));
        if (sums.size >= perMessage) receive();
      }
      receive();
      expect(sums.size).toBe(0);
      expect(received).toStrictEqual(expected);
    }), { numRuns: 300 });
  });

  it("keeps a sum past 2^53 exact, and refuses one past 2^64 - 1", () => {
    const sums = new DaySums();
    for (let i = 0; i < 10_000; i++) sums.add(0, 0, 20_000, 1_000_000_000_000, 1, 0, 999_999_999_999);
    expect(framesOf(sums.takeFrames())).toStrictEqual([[0, 20_000, { 0: [10n ** 16n, 10_000n, 0n, 9_999_999_999_990_000n, 10_000n] }]]);

    // 2^64 - 1 = 2048 * (2^53 - 1) + 2047: events of the largest exact number reach the limit in
    // 2,049 additions (at the per-event ceiling of 10^12 it takes 18.5 million of them).
    for (let i = 0; i < 2048; i++) sums.add(0, 0, 20_000, Number.MAX_SAFE_INTEGER, 0, 0, 0);
    sums.add(0, 0, 20_000, 2047, 0, 0, 0);
    expect(framesOf(sums.takeFrames())).toStrictEqual([[0, 20_000, { 0: [2n ** 64n - 1n, 0n, 0n, 0n, 2049n] }]]);

    for (let i = 0; i < 2048; i++) sums.add(0, 0, 20_000, Number.MAX_SAFE_INTEGER, 0, 0, 0);
    sums.add(0, 0, 20_000, 2048n, 0, 0, 0);
    expect(() => sums.takeFrames()).toThrow(SumLimitError);
  });
});
