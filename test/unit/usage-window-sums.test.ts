import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { EVENTS, SUM_LIMIT, SUMS } from "../../src/domain/usage-totals.js";
import { CorruptTotalsError, addRowsToWindow } from "../../src/storage/usage-sums-codec.js";
import { WindowSums } from "../../src/domain/usage-window-sums.js";
import { packedOf, totalsOf } from "../helpers/packed-totals.js";

type Event = [model: number, input: number | bigint, output: number | bigint, basic: number | bigint, payGo: number | bigint];

/** Stored rows as a statement reads them: their totals end to end, one row per member, and "key,length" per row. */
function rows(members: ReadonlyArray<[key: number, events: readonly Event[]]>): { totals: Uint8Array; index: string } {
  const parts = members.map(([key, events]) => {
    return [key, packedOf(totalsOf(events))] as const;
  });
  return { totals: new Uint8Array(parts.flatMap(([, part]) => [...part])), index: parts.map(([key, part]) => `${key},${part.length}`).join(",") };
}


/** What WindowSums.sum must give for an exact total: a number while it is safe, else a bigint. */
const exact = (total: bigint) => (total <= BigInt(Number.MAX_SAFE_INTEGER) && total >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(total) : total);

describe("a query's window sums", () => {
  it("adds and subtracts stored rows of several members exactly, up to 2^64 - 1", () => {
    const value = fc.oneof(fc.integer({ min: 0, max: 1_000_000_000_000 }), fc.bigInt({ min: 0n, max: SUM_LIMIT / 8n }));
    const event = fc.tuple(fc.integer({ min: 1, max: 6 }), value, value, value, value);
    // Per member: its events, and how many of them fall before the window (those are subtracted).
    const member = fc.tuple(fc.array(event, { maxLength: 8 }), fc.nat());
    fc.assert(fc.property(fc.uniqueArray(fc.integer({ min: 1, max: 2 ** 40 }), { minLength: 1, maxLength: 5 }).chain((keys) =>
      fc.tuple(fc.constant(keys), fc.array(member, { minLength: keys.length, maxLength: keys.length }))), ([keys, members]) => {
      const through = keys.map((key, i) => [key, members[i]![0]] as [number, Event[]]);
      const before = keys.map((key, i) => [key, members[i]![0].slice(0, members[i]![1] % (members[i]![0].length + 1))] as [number, Event[]]);
      const sums = new WindowSums(keys.length);
      const positionOf = new Map(keys.map((key, position) => [key, position]));
      const [added, taken] = [rows(through), rows(before)];
      addRowsToWindow(sums, added.totals, added.index, false, (key) => positionOf.get(key)!);
      addRowsToWindow(sums, taken.totals, taken.index, true, (key) => positionOf.get(key)!);

      for (const [position, [events, cut]] of members.entries()) {
        const inWindow = events.slice(cut % (events.length + 1));
        for (let model = 1; model <= 6; model++) {
          const mine = inWindow.filter((e) => e[0] === model);
          const slot = sums.modelIds.indexOf(model);
          expect(slot >= 0, `model ${model} was read`).toBe(through.some(([, stored]) => stored.some((e) => e[0] === model)));
          if (slot < 0) continue;
          expect(sums.hasEvents(slot, position)).toBe(mine.length > 0);
          const expected = [1, 2, 3, 4].map((i) => exact(mine.reduce((total, e) => total + BigInt(e[i]!), 0n)));
          expect([0, 1, 2, 3].map((i) => sums.sum(slot, position, i))).toStrictEqual(expected);
          expect(sums.sum(slot, position, EVENTS)).toBe(mine.length);
        }
      }
    }), { numRuns: 300 });
  });

  it("carries a sum past 2^53 into a bigint, and gives a number again once it is back below", () => {
    const sums = new WindowSums(2);
    const model = sums.of(9);
    model.add(1, 0, Number.MAX_SAFE_INTEGER); // the second member's first sum
    model.add(1, 0, 2);
    expect(sums.sum(0, 1, 0)).toBe(2n ** 53n + 1n);
    model.add(1, 0, -3);
    expect(sums.sum(0, 1, 0)).toBe(Number.MAX_SAFE_INTEGER - 1);
    model.addValue(1, 0, 2n ** 64n - 1n);
    expect(sums.sum(0, 1, 0)).toBe(2n ** 64n - 1n + 2n ** 53n - 2n);
    // The other member and the other sums are untouched.
    for (let i = 0; i < SUMS; i++) expect(sums.sum(0, 0, i)).toBe(0);
    for (let i = 1; i < SUMS; i++) expect(sums.sum(0, 1, i)).toBe(0);
    expect(sums.hasEvents(0, 0)).toBe(false);
  });

  it("a model whose totals cancel out has no events in the window, whatever its sums of zero", () => {
    const sums = new WindowSums(1);
    const week = rows([[7, [[4, 10, 2, 0, 0], [5, 0, 0, 0, 0]]]]);
    const monday = rows([[7, [[5, 0, 0, 0, 0]]]]);
    addRowsToWindow(sums, week.totals, week.index, false, () => 0);
    addRowsToWindow(sums, monday.totals, monday.index, true, () => 0);
    expect(sums.modelIds).toStrictEqual([4, 5]);
    expect(sums.hasEvents(0, 0)).toBe(true);
    expect([0, 1, 2, 3, 4].map((i) => sums.sum(0, 0, i))).toStrictEqual([10, 2, 0, 0, 1]);
    expect(sums.hasEvents(1, 0)).toBe(false);
  });

  it("refuses corrupt rows instead of reading past them: a cut entry, a length past the data, bytes left over", () => {
    const { totals } = rows([[7, [[4, 10, 2, 300000, 0], [5, 1, 1, 1, 1]]]]);
    const read = (bytes: Uint8Array, index: string) => () => addRowsToWindow(new WindowSums(1), bytes, index, false, () => 0);
    const cut = totals.slice(0, -1);
    expect(read(cut, `7,${cut.length}`)).toThrow(CorruptTotalsError); // the last entry ends inside a varint
    expect(read(cut, `7,${totals.length}`)).toThrow(CorruptTotalsError);
    expect(read(totals, `7,${totals.length - 1}`)).toThrow(CorruptTotalsError);
    const lastByteContinues = totals.slice();
    lastByteContinues[lastByteContinues.length - 1] = 0x81; // a varint that goes on past the data
    expect(read(lastByteContinues, `7,${totals.length}`)).toThrow(CorruptTotalsError);
  });
});
