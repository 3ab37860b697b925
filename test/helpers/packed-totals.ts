// Packed usage totals as the store keeps them (src/storage/usage-sums-codec.ts, FRAMED TOTALS), for tests of
// the format: a member's framed totals, and the bare totals inside a frame.
import type { TotalsByModel } from "../../src/domain/usage-totals.js";
import { framedBytes, packFramed, VarintReader } from "../../src/storage/usage-sums-codec.js";

/** The stored framed totals of `memberKey` with `totals` (merged onto the bare totals `onto`, when given). */
export function framedOf(totals: TotalsByModel, memberKey: number, onto?: Uint8Array): Uint8Array {
  const out = new Uint8Array(framedBytes(totals, onto));
  return out.slice(0, packFramed(totals, out, 0, memberKey, onto));
}

/** The bare packed totals inside a frame. */
export function unframed(framed: Uint8Array): Uint8Array {
  const reader = new VarintReader(framed);
  reader.next(); // the member key
  const length = reader.next();
  return framed.subarray(reader.at, reader.at + length);
}

/** The bare packed totals of `totals`. */
export const packedOf = (totals: TotalsByModel): Uint8Array => unframed(framedOf(totals, 0));
