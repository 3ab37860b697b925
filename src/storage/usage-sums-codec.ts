// The byte format of stored usage sums. PACKED TOTALS: one entry per model, each six unsigned LEB128
// varints (model_id, then the five sums of SUMS), in no particular order (a model may even repeat:
// sums add up). A usage_running_total row's `totals` are packed totals: one row per member and day,
// whatever the number of models, keeps a query to two rows a member, and varints keep the rows small
// (typically 15-20 bytes a model). The sums themselves are domain/usage-totals.ts's.
import { SUMS, SUM_LIMIT, SumLimitError, type ModelSums, type TotalsByModel } from "../domain/usage-totals.js";
import type { WindowSums } from "../domain/usage-window-sums.js";

/** The longest entry: a 32-bit model id (5 bytes) and five 64-bit sums (10 bytes each). */
export const MAX_ENTRY_BYTES = 5 + SUMS * 10;
/** Varints of up to 7 bytes (49 bits) are decoded as numbers; longer ones as bigints. */
const NUMBER_BYTES = 7;

/**
 * CORRUPT. Packed totals that end inside an entry (or a frame that claims more bytes than there are)
 * are refused instead of read on: VarintReader stops at a byte past the buffer (`undefined >= 0x80`
 * is false), and each reader of packed totals checks that its last entry ended exactly at its end.
 * (A loop waiting for `byte < 0x80` never stopped on such bytes: one corrupt stored row would have
 * held the server's thread for good.) Only this code writes packed totals; this guards the store.
 */
export class CorruptTotalsError extends Error {
  constructor(at: number, end: number) {
    super(`usage totals: corrupt packed totals (an entry ends at byte ${at}, the data at ${end})`);
  }
}

/**
 * Adds packed totals (`packed` from `at` to `end`) to `target`, or with `sign` -1 takes them away.
 * `modelIds`, if given, maps the packed model numbers to model ids (an import's worker numbers
 * models by file).
 */
export function addPackedTotals(target: TotalsByModel, packed: Uint8Array, at = 0, end = packed.length, modelIds?: ArrayLike<number>,
  sign: 1 | -1 = 1): void {
  const reader = new VarintReader(packed, at);
  while (reader.at < end) {
    const model = reader.next();
    const sums = target.sumsOf(modelIds ? modelIds[model]! : model);
    for (let i = 0; i < SUMS; i++) {
      const start = reader.at;
      const value = reader.next();
      if (reader.at - start <= NUMBER_BYTES) sums.add(i, sign * value);
      else sums.addBig(i, sign === 1 ? readBigVarint(packed, start) : -readBigVarint(packed, start));
    }
  }
  if (reader.at !== end) throw new CorruptTotalsError(reader.at, end);
}

/**
 * Adds (or, `negate`, subtracts) the packed totals `packed` from `at` to `end` to a member's sums
 * in a query's WindowSums.
 */
function addPackedToWindow(window: WindowSums, packed: Uint8Array, at: number, end: number, member: number, negate: boolean): void {
  const sign = negate ? -1 : 1;
  const base = member * SUMS;
  const reader = new VarintReader(packed, at);
  while (reader.at < end) {
    const slot = window.slotOf(reader.next());
    for (let i = 0; i < SUMS; i++) {
      const start = reader.at;
      const value = reader.next();
      if (reader.at - start <= NUMBER_BYTES) window.addNumber(slot, base + i, sign * value);
      else window.addBig(slot, base + i, BigInt(sign) * readBigVarint(packed, start));
    }
  }
  if (reader.at !== end) throw new CorruptTotalsError(reader.at, end);
}

/**
 * Adds (or subtracts) stored rows' totals read end to end (`totals`) to a query's WindowSums, `index`
 * giving each row's member key and length ("key,length,key,length…"). `memberOf` gives a member
 * key's position.
 */
export function addRowsToWindow(window: WindowSums, totals: Uint8Array, index: string, negate: boolean,
  memberOf: (memberKey: number) => number): void {
  forEachStoredRow(totals, index, 2, (fields, first, start, end) =>
    addPackedToWindow(window, totals, start, end, memberOf(Number(fields[first])), negate));
}

/**
 * Stored rows read end to end (`totals`), `index` giving each row's `fieldsPerRow` numbers joined
 * by commas, the last its byte length: `each` gets the fields (the row's from `first`) and the row's
 * bytes, from `start` to `end`. Lengths that do not add up to the bytes are refused.
 */
export function forEachStoredRow(totals: Uint8Array, index: string, fieldsPerRow: number,
  each: (fields: readonly string[], first: number, start: number, end: number) => void): void {
  const fields = index.split(",");
  let at = 0;
  for (let first = 0; first + fieldsPerRow <= fields.length; first += fieldsPerRow) {
    const end = at + Number(fields[first + fieldsPerRow - 1]);
    if (end > totals.length) throw new CorruptTotalsError(end, totals.length);
    each(fields, first, at, end);
    at = end;
  }
  if (at !== totals.length) throw new CorruptTotalsError(at, totals.length);
}

/** The most bytes packTotals writes for `totals`, with `onto` as given. */
export function packedBytes(totals: TotalsByModel, onto?: Uint8Array): number {
  return (onto?.length ?? 0) + totals.models.size * MAX_ENTRY_BYTES;
}

/**
 * Writes a row's totals into `out` from `at`, which has packedBytes(totals, onto) bytes of room:
 * `totals` packed; with `onto` (a stored row's packed totals), those totals plus `totals`. Returns the
 * offset after them; throws SumLimitError past 2^64 - 1.
 */
export function packTotals(totals: TotalsByModel, out: Uint8Array, at: number, onto?: Uint8Array): number {
  if (onto) return packOnto(totals, onto, out, at);
  for (const [id, sums] of totals.models) at = packEntry(out, at, id, sums);
  return at;
}

/**
 * Writes `packed` plus `totals` into `out` from `at`, without decoding what needs no change: the
 * entry of a model `totals` holds gets its sums added, every other entry is copied as it is, and the
 * models `packed` lacks follow. Returns the offset after them. (Decoding a stored row into objects
 * and packing it again cost about 20 µs for 20 models; an ingestion does it for every member it
 * touches.)
 */
function packOnto(totals: TotalsByModel, packed: Uint8Array, out: Uint8Array, at: number): number {
  const mark = totals.newMark(); // marks the models merged by this call
  const reader = new VarintReader(packed);
  while (reader.at < packed.length) {
    const entryStart = reader.at;
    const id = reader.next();
    const sums = totals.models.get(id);
    if (!sums || sums.mark === mark) {
      // Copied byte by byte once read past: a subarray per entry to copy (about 17,000 a 1,000-event
      // RPC batch) cost more than the bytes.
      for (let i = 0; i < SUMS; i++) reader.next();
      for (let q = entryStart; q < reader.at; q++) out[at++] = packed[q]!;
      continue;
    }
    sums.mark = mark;
    at = writeVarint(out, at, id);
    for (let i = 0; i < SUMS; i++) {
      const start = reader.at;
      const total = reader.next() + sums.values[i]!;
      if (reader.at - start <= NUMBER_BYTES && !sums.big && total <= Number.MAX_SAFE_INTEGER) {
        at = writeVarint(out, at, total);
      } else {
        const big = readBigVarint(packed, start) + sums.total(i);
        if (big > SUM_LIMIT) throw new SumLimitError();
        at = writeBigVarint(out, at, big);
      }
    }
  }
  if (reader.at !== packed.length) throw new CorruptTotalsError(reader.at, packed.length);
  for (const [id, sums] of totals.models) if (sums.mark !== mark) at = packEntry(out, at, id, sums);
  return at;
}

/** Writes one model's entry (its id, then its sums); throws SumLimitError past 2^64 - 1. */
function packEntry(out: Uint8Array, at: number, id: number, sums: ModelSums): number {
  at = writeVarint(out, at, id);
  for (let i = 0; i < SUMS; i++) {
    if (sums.big) {
      const total = sums.total(i);
      if (total > SUM_LIMIT) throw new SumLimitError();
      at = writeBigVarint(out, at, total);
    } else {
      at = writeVarint(out, at, sums.values[i]!);
    }
  }
  return at;
}

/** The most bytes writeRenumbered writes for the packed totals from `start` to `end`. */
export const renumberedBytes = (start: number, end: number) => 2 * (end - start);

/**
 * Writes packed totals whose models are an import's file numbers (`frames` from `start` to `end`)
 * into `out` from `at`, numbered by model id instead: copied byte by byte but for the model numbers
 * (no decoding, no packing). Returns the offset after them. An entry is at least 6 bytes, and its
 * model number grows by at most 4 (to a 32-bit id): they take at most renumberedBytes(start, end).
 */
export function writeRenumbered(out: Uint8Array, at: number, frames: Uint8Array, start: number, end: number, modelIds: ArrayLike<number>): number {
  const reader = new VarintReader(frames, start);
  while (reader.at < end) {
    at = writeVarint(out, at, modelIds[reader.next()]!);
    const sumsStart = reader.at;
    for (let i = 0; i < SUMS; i++) reader.next();
    for (let q = sumsStart; q < reader.at; q++) out[at++] = frames[q]!;
  }
  return at;
}

/**
 * Writes a non-negative integer below 2^53 as a varint; returns the next offset. In integer
 * arithmetic: a value past 2^31 first gives its low 28 bits (four bytes), then the rest, which is
 * below 2^25 (a float remainder and division per byte made packing an import's running totals,
 * whose sums of micro-units are mostly past 2^31, about twice as slow).
 */
export function writeVarint(out: Uint8Array, at: number, value: number): number {
  if (value >= 0x80000000) {
    const high = Math.floor(value / 0x10000000);
    let low = value - high * 0x10000000;
    for (let i = 0; i < 4; i++) {
      out[at++] = (low & 0x7f) | 0x80;
      low >>>= 7;
    }
    value = high;
  }
  while (value >= 0x80) {
    out[at++] = (value & 0x7f) | 0x80;
    value >>>= 7;
  }
  out[at++] = value;
  return at;
}

/** Writes a non-negative bigint as a varint; returns the next offset. */
export function writeBigVarint(out: Uint8Array, at: number, value: bigint): number {
  while (value >= 0x80n) {
    out[at++] = Number(value & 0x7fn) | 0x80;
    value >>= 7n;
  }
  out[at++] = Number(value);
  return at;
}

/**
 * A read position in varints, and the one reader of their values: `next()` reads the varint there
 * and moves past it. Its value is exact below 2^53; a caller that may meet a longer sum reads it
 * again with readBigVarint (NUMBER_BYTES). A hot path: one small object a call, not a tuple per value.
 */
export class VarintReader {
  constructor(private readonly bytes: Uint8Array, public at = 0) {}

  next(): number {
    let value = 0;
    let scale = 1;
    for (;;) {
      const byte = this.bytes[this.at++]!;
      value += (byte & 0x7f) * scale;
      scale *= 128;
      if (!(byte >= 0x80)) return value;
    }
  }
}

/** Reads a varint of any length at `at` as a bigint. */
export function readBigVarint(packed: Uint8Array, at: number): bigint {
  let value = 0n;
  let shift = 0n;
  for (;;) {
    const byte = packed[at++]!;
    value |= BigInt(byte & 0x7f) << shift;
    shift += 7n;
    if (!(byte >= 0x80)) return value;
  }
}
