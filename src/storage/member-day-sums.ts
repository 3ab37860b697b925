// The stored form of each member's sums of one day (usage_rollup.member_sums, on a day's all-models
// row): per member in key order, unsigned LEB128 varints: the member key's distance from the previous
// one (the first: the key), then the five sums of ModelSums in its order (input and output tokens,
// basic and pay-go micro-units, events). Varints of up to 7 bytes are read as numbers, longer ones as
// bigints, so every sum is exact.
import { ModelSums, NUMBER_BYTES, SUMS, readBigVarint, readVarint, writeBigVarint, writeVarint } from "../domain/usage-totals.js";

/** The most bytes an entry takes: a key and five sums, each at most a 64-bit varint past 2^64 (ten bytes a 2^70). */
const ENTRY_BYTES = 6 * 11;

export function encodeMemberSums(sums: ReadonlyMap<number, ModelSums>): Uint8Array {
  const keys = [...sums.keys()].sort((a, b) => a - b);
  const out = new Uint8Array(keys.length * ENTRY_BYTES);
  let at = 0;
  let previous = 0;
  for (const key of keys) {
    at = writeVarint(out, at, key - previous);
    previous = key;
    const memberSums = sums.get(key)!;
    for (let i = 0; i < SUMS; i++) {
      const value = memberSums.exact(i);
      at = typeof value === "number" ? writeVarint(out, at, value) : writeBigVarint(out, at, value);
    }
  }
  return out.subarray(0, at);
}

/** Calls `each` with every member's key and sums (numbers while below 2^49, else bigints), in key order. */
export function forEachMemberSums(packed: Uint8Array, each: (memberKey: number, sums: Array<number | bigint>) => void): void {
  let at = 0;
  let key = 0;
  const values: Array<number | bigint> = [0, 0, 0, 0, 0];
  while (at < packed.length) {
    let step: number;
    [step, at] = readVarint(packed, at);
    key += step;
    for (let i = 0; i < SUMS; i++) {
      let end = at;
      while (packed[end]! >= 0x80) end++;
      if (end >= packed.length) throw new Error("member day sums: an entry ends past the data");
      if (end - at < NUMBER_BYTES) [values[i], at] = readVarint(packed, at);
      else {
        values[i] = readBigVarint(packed, at);
        at = end + 1;
      }
    }
    each(key, values);
  }
}

/** Adds packed member sums into `into` (member key -> sums). */
export function addMemberSums(packed: Uint8Array, into: Map<number, ModelSums>): void {
  forEachMemberSums(packed, (key, values) => {
    let sums = into.get(key);
    if (!sums) into.set(key, (sums = new ModelSums()));
    for (let i = 0; i < SUMS; i++) sums.addValue(i, values[i]!);
  });
}
