// The stored form of each member's sums of one day (usage_rollup.member_sums, on a day's all-models
// row): per member in key order, unsigned LEB128 varints: the member key's distance from the previous
// one (the first: the key), then the five sums of ModelSums in its order (input and output tokens,
// basic and pay-go micro-units, events). Varints of up to 7 bytes are read as numbers, longer ones as
// bigints, so every sum is exact.
import type { MemberSumsOfDay } from "../domain/report-cells.js";
import { ModelSums, SUMS, exactSum } from "../domain/usage-totals.js";
import { NUMBER_BYTES, readBigVarint, readVarint, writeBigVarint, writeVarint } from "./usage-sums-codec.js";

/** The most bytes an entry takes: a key and five sums, each at most a 64-bit varint past 2^64 (ten bytes a 2^70). */
const ENTRY_BYTES = 6 * 11;

/**
 * Stored member sums (or none) with `added` merged in, in key order: a stored member the delta does
 * not touch is copied byte for byte (a live batch touches a few hundred of a day's thousands).
 */
export function mergeMemberSums(stored: Uint8Array | null, added: ReadonlyMap<number, ModelSums>): Uint8Array {
  const keys = [...added.keys()].sort((a, b) => a - b);
  const from = stored ?? new Uint8Array();
  // A copied entry's key step may grow by a byte or four, never past its stored length plus 5.
  const out = new Uint8Array(2 * from.length + 16 + keys.length * ENTRY_BYTES);
  let written = 0;
  let previous = 0;
  let next = 0; // the next of `keys` to write
  const writeAdded = (key: number, stored?: Array<number | bigint>) => {
    written = writeVarint(out, written, key - previous);
    previous = key;
    const sums = added.get(key)!;
    for (let i = 0; i < SUMS; i++) {
      const value = stored === undefined ? sums.exact(i) : exactSum(stored[i]!, sums.exact(i));
      written = typeof value === "number" ? writeVarint(out, written, value) : writeBigVarint(out, written, value);
    }
  };
  forEachStoredEntry(from, (key, values, sumsFrom, sumsTo) => {
    while (next < keys.length && keys[next]! < key) writeAdded(keys[next++]!);
    if (next < keys.length && keys[next] === key) {
      writeAdded(keys[next++]!, values);
      return;
    }
    written = writeVarint(out, written, key - previous);
    previous = key;
    out.set(from.subarray(sumsFrom, sumsTo), written);
    written += sumsTo - sumsFrom;
  });
  while (next < keys.length) writeAdded(keys[next++]!);
  return out.subarray(0, written);
}

/**
 * A day's member sums decoded into `into` (its arrays grown as needed, for reuse from day to day):
 * members in key order, each with its five sums as numbers; a member with a sum past 7 varint bytes
 * (2^49 and up) has its five as bigints in `into.big` instead.
 */
export function decodeMemberSums(packed: Uint8Array, into: MemberSumsOfDay): MemberSumsOfDay {
  const most = Math.ceil(packed.length / (SUMS + 1));
  if (into.keys.length < most) {
    into.keys = new Float64Array(most);
    into.sums = new Float64Array(most * SUMS);
  }
  const { keys, sums } = into;
  into.big = undefined;
  let at = 0;
  let key = 0;
  let count = 0;
  // Inline varints (a call per value cost more than the rest of the loop); a value past the end reads as 0 and is caught below.
  while (at < packed.length) {
    const entry = at;
    let value = 0;
    let scale = 1;
    let byte: number;
    do {
      byte = packed[at++]!;
      value += (byte & 0x7f) * scale;
      scale *= 128;
    } while (byte >= 0x80);
    key += value;
    keys[count] = key;
    let wide = false;
    for (let i = 0; i < SUMS; i++) {
      const start = at;
      value = 0;
      scale = 1;
      do {
        byte = packed[at++]!;
        value += (byte & 0x7f) * scale;
        scale *= 128;
      } while (byte >= 0x80);
      if (at - start > NUMBER_BYTES) wide = true;
      sums[count * SUMS + i] = value;
    }
    if (wide) {
      const values: bigint[] = [];
      forEachStoredEntry(packed.subarray(entry, at), (_, exact) => values.push(...exact.map((v) => BigInt(v))));
      (into.big ??= new Map()).set(count, values);
    }
    count++;
  }
  if (at !== packed.length) throw new Error("member day sums: an entry ends past the data");
  into.count = count;
  return into;
}

/** Walks the entries: each member's key, its sums (one array refilled), and where its five sums' bytes lie in `packed`. */
function forEachStoredEntry(packed: Uint8Array,
  each: (memberKey: number, values: Array<number | bigint>, sumsFrom: number, sumsTo: number) => void): void {
  const values: Array<number | bigint> = [0, 0, 0, 0, 0];
  let at = 0;
  let key = 0;
  while (at < packed.length) {
    let step: number;
    [step, at] = readVarint(packed, at);
    key += step;
    const from = at;
    at = readSums(packed, at, values);
    each(key, values, from, at);
  }
}

/** Five varints at `at` into `values` (up to 7 bytes a number, longer ones a bigint); returns the offset after them. */
function readSums(packed: Uint8Array, at: number, values: Array<number | bigint>): number {
  for (let i = 0; i < SUMS; i++) {
    let end = at;
    while (packed[end]! >= 0x80) end++;
    if (end >= packed.length) throw new Error("member day sums: an entry ends past the data");
    if (end - at < NUMBER_BYTES) {
      // Inline (readVarint's [value, next] pair would be an array a varint, millions a report).
      let value = 0;
      let scale = 1;
      for (; at <= end; at++, scale *= 128) value += (packed[at]! & 0x7f) * scale;
      values[i] = value;
    } else {
      values[i] = readBigVarint(packed, at);
      at = end + 1;
    }
  }
  return at;
}
