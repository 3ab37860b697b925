// Packed usage totals as the store keeps them (src/storage/usage-sums-codec.ts, PACKED TOTALS), for
// tests of the format: made from events, and read back as plain bigints.
import { TotalsByModel } from "../../src/domain/usage-totals.js";
import { addPackedTotals, packedBytes, packTotals } from "../../src/storage/usage-sums-codec.js";

/** Totals as plain bigints: model id → [input, output, basic, pay-go, events], by model id. */
export function plainTotals(totals: TotalsByModel): Record<number, bigint[]> {
  const { entries } = totals;
  const models = Array.from({ length: entries.count }, (_, entry) => entry).sort((a, b) => entries.model[a]! - entries.model[b]!);
  return Object.fromEntries(models.map((entry) => [entries.model[entry]!, [0, 1, 2, 3, 4].map((i) => entries.sums.total(entry, i))]));
}

/** Packed totals (from `start` to `end`) as plain bigints. */
export function plainPacked(packed: Uint8Array, start = 0, end = packed.length): Record<number, bigint[]> {
  const totals = new TotalsByModel();
  addPackedTotals(totals, packed, start, end);
  return plainTotals(totals);
}

/** The packed totals of `totals`. */
export function packedOf(totals: TotalsByModel): Uint8Array {
  const out = new Uint8Array(packedBytes(totals));
  return out.slice(0, packTotals(totals, out, 0));
}

/** Totals made from events: each (model id, input, output, basic, pay-go) one event, values as numbers or bigints. */
export function totalsOf(events: ReadonlyArray<readonly [model: number, ...values: Array<number | bigint>]>): TotalsByModel {
  const totals = new TotalsByModel();
  for (const [model, ...values] of events) {
    const [input = 0, output = 0, basic = 0, payGo = 0] = values;
    totals.entries.sums.addEvent(totals.entryFor(model), input, output, basic, payGo);
  }
  return totals;
}
