import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { DaySums, dayOfKey, memberOfKey } from "../../src/storage/usage-running-totals.js";

/** Each (member, day) held, in the order of `keys()`, as [member, day, its sums as plain bigints by model]. */
function heldSums(sums: DaySums): Array<[number, number, Record<number, bigint[]>]> {
  const { entries } = sums;
  return [...sums.keys()].map((key) => {
    const models: Record<number, bigint[]> = {};
    for (let e = sums.firstOf(key); e !== -1; e = entries.next[e]!) {
      models[entries.model[e]!] = [0, 1, 2, 3, 4].map((i) => entries.sums.total(e, i));
    }
    return [memberOfKey(key), dayOfKey(key), models];
  });
}

describe("day sums", () => {
  it("hold every (member, day, model) sum exactly, their (member, day) keys in member then day order, until cleared", () => {
    const value = fc.integer({ min: 0, max: 1_000_000_000_000 });
    const member = fc.oneof(fc.nat(3), fc.constantFrom(70_000, 2 ** 31 - 1));
    // Few days, so that keys repeat (models chained under one key, keys met again after others), and the ends of the range.
    const day = fc.oneof(fc.integer({ min: 19_000, max: 19_003 }), fc.constantFrom(0, 2_932_896));
    const event = fc.tuple(member, fc.nat(3), day, value, value, value, value);
    fc.assert(fc.property(fc.array(event, { maxLength: 60 }), fc.integer({ min: 1, max: 20 }), (events, perTake) => {
      const sums = new DaySums();
      const received = new Map<string, bigint[]>();
      const take = () => {
        const held = heldSums(sums);
        const order = held.map(([m, day]) => [m, day]);
        expect(order).toStrictEqual([...order].sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!));
        for (const [m, day, models] of held) {
          for (const [model, values] of Object.entries(models)) {
            const key = `${m}:${day}:${model}`;
            received.set(key, values.map((v, i) => v + (received.get(key)?.[i] ?? 0n)));
          }
        }
        sums.clear();
      };
      const expected = new Map<string, bigint[]>();
      for (const [m, model, day, ...v] of events) {
        sums.add(m, model, day, v[0]!, v[1]!, v[2]!, v[3]!);
        const key = `${m}:${day}:${model}`;
        expected.set(key, [...v.map(BigInt), 1n].map((x, i) => x + (expected.get(key)?.[i] ?? 0n)));
        if (sums.size >= perTake) take();
      }
      take();
      expect(sums.size).toBe(0);
      expect(received).toStrictEqual(expected);
    }), { numRuns: 300 });
  });

  it("refuses a member key past 2^31 - 1, where its keys would no longer be exact", () => {
    expect(() => new DaySums().add(2 ** 31, 1, 20_000, 1, 1, 1, 1)).toThrow(/2\^31/);
  });

  it("keeps a sum past 2^53 exact", () => {
    const sums = new DaySums();
    for (let i = 0; i < 10_000; i++) sums.add(0, 2, 20_000, 1_000_000_000_000, 1, 0, 999_999_999_999);
    sums.add(0, 2, 20_000, 2n ** 63n, 0, 0, 0);
    expect(heldSums(sums)).toStrictEqual([[0, 20_000, { 2: [10n ** 16n + 2n ** 63n, 10_000n, 0n, 9_999_999_999_990_000n, 10_001n] }]]);
  });
});
