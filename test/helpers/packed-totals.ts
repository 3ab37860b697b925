// Packed usage totals as the store keeps them (src/storage/usage-sums-codec.ts, PACKED TOTALS), for
// tests of the format.
import type { TotalsByModel } from "../../src/domain/usage-totals.js";
import { packedBytes, packTotals } from "../../src/storage/usage-sums-codec.js";

/** The packed totals of `totals` (merged onto the packed totals `onto`, when given). */
export function packedOf(totals: TotalsByModel, onto?: Uint8Array): Uint8Array {
  const out = new Uint8Array(packedBytes(totals, onto));
  return out.slice(0, packTotals(totals, out, 0, onto));
}
