// Packed usage totals as the store keeps them (src/storage/usage-sums-codec.ts, CELL FRAMES), for tests of
// the format: a member's framed cell, and the bare totals inside a frame.
import type { TotalsByModel } from "../../src/domain/usage-totals.js";
import { cellBytes, packCell, readVarint } from "../../src/storage/usage-sums-codec.js";

/** The stored cell of `memberKey` with `totals` (merged onto the bare totals `onto`, when given). */
export function cellOf(totals: TotalsByModel, memberKey: number, onto?: Uint8Array): Uint8Array {
  const out = new Uint8Array(cellBytes(totals, onto));
  return out.slice(0, packCell(totals, out, 0, memberKey, onto));
}

/** The bare packed totals inside a cell's frame. */
export function unframed(cell: Uint8Array): Uint8Array {
  const [length, start] = readVarint(cell, readVarint(cell, 0)[1]);
  return cell.subarray(start, start + length);
}

/** The bare packed totals of `totals`. */
export const packedOf = (totals: TotalsByModel): Uint8Array => unframed(cellOf(totals, 0));
