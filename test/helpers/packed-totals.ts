// Packed usage totals as the store keeps them (src/storage/usage-sums-codec.ts, PACKED TOTALS), for
// tests of the format: made from events, and read back as plain bigints.
import { TotalsByModel } from "../../src/domain/usage-totals.js";
import { packedBytes, packTotals } from "../../src/storage/usage-sums-codec.js";

/** Totals as plain bigints: model id → [input, output, basic, pay-go, events], by model id. */
export function plainTotals(totals: TotalsByModel): Record<number, bigint[]> {
  const { entries } = totals;
  const models = Array.from({ length: entries.count }, (_, entry) => entry).sort((a, b) => entries.model[a]! - entries.model[b]!);
  return Object.fromEntries(models.map((entry) => [entries.model[entry]!, [0, 1, 2, 3, 4].map((i) => entries.sums.total(entry, i))]));
}

/**
 * An independent reader of packed totals (bigint sums per model id, from `start` to `end`); throws on a truncated varint instead of
 * reading on.
 */
export function decodePacked(packed: Uint8Array, start = 0, end = packed.length): Record<number, bigint[]> {
  let at = start;
  const varint = () => {
    let value = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (at >= end) throw new Error(`truncated varint at ${at}`);
      const byte = packed[at++]!;
      value |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return value;
    }
  };
  const sums: Record<number, bigint[]> = {};
  while (at < end) {
    const model = Number(varint());
    const values = [0, 1, 2, 3, 4].map(() => varint());
    sums[model] = (sums[model] ?? [0n, 0n, 0n, 0n, 0n]).map((sum, i) => sum + values[i]!);
  }
  return sums;
}

/** The packed totals of `totals`. */
export function packedOf(totals: TotalsByModel): Uint8Array {
  const out = new Uint8Array(packedBytes(totals));
  return out.slice(0, packTotals(totals, out, 0));
}

/** The packed totals of `totals` added onto packed totals (as a running-total row is written again). */
export function packedOnto(totals: TotalsByModel, onto: Uint8Array): Uint8Array {
  const out = new Uint8Array(packedBytes(totals, onto));
  return out.slice(0, packTotals(totals, out, 0, onto));
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
