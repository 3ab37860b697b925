// The formats of stored usage sums. PACKED TOTALS (usage_running_total.totals): per model, six unsigned LEB128 varints (model id, the
// five SUMS), unordered; a repeated model's sums add up. USAGE TEXT (statements' sums, pending events): ";"-joined entries of ","-joined integers.
import { SUMS, SUM_LIMIT, SumLimitError, type TotalsByModel } from "../domain/usage-totals.js";
import type { WindowSums } from "../domain/usage-window-sums.js";

/** The longest entry: a 32-bit model id (5 bytes) and five 64-bit sums (10 bytes each). */
const MAX_ENTRY_BYTES = 5 + SUMS * 10;
/** Varints of up to 7 bytes (49 bits) are decoded as numbers; longer ones as bigints. */
const NUMBER_BYTES = 7;

/** Packed totals ending inside an entry, or a row claiming more bytes than there are: refused, not read on (it guards the store). */
export class CorruptTotalsError extends Error {
  constructor(at: number, end: number) {
    super(`usage totals: corrupt packed totals (an entry ends at byte ${at}, the data at ${end})`);
  }
}

function addPackedToWindow(window: WindowSums, packed: Uint8Array, at: number, end: number, member: number, negate: boolean): void {
  const sign = negate ? -1 : 1;
  const reader = new VarintReader(packed, at);
  while (reader.at < end) {
    const sums = window.of(reader.next());
    for (let i = 0; i < SUMS; i++) {
      const start = reader.at;
      const value = reader.next();
      if (reader.at - start <= NUMBER_BYTES) sums.add(member, i, sign * value);
      else sums.addBig(member, i, BigInt(sign) * readBigVarint(packed, start));
    }
  }
  if (reader.at !== end) throw new CorruptTotalsError(reader.at, end);
}

/** Stored rows' totals, end to end in `totals`, to a query's WindowSums; `index`: "key,length,key,length…". */
export function addRowsToWindow(window: WindowSums, totals: Uint8Array, index: string, negate: boolean,
  memberOf: (memberKey: number) => number): void {
  forEachStoredRow(totals, index, 2, (fields, first, start, end) =>
    addPackedToWindow(window, totals, start, end, memberOf(Number(fields[first])), negate));
}

/**
 * Stored rows end to end in `totals`, `index` giving each row's `fieldsPerRow` numbers, the last its byte length; `each` gets the fields
 * (the row's from `first`) and the row's bytes. Lengths that do not add up to the bytes are refused.
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

export function packedBytes(totals: TotalsByModel, onto?: Uint8Array): number {
  return (onto?.length ?? 0) + totals.entries.count * MAX_ENTRY_BYTES;
}

/**
 * Writes `totals`, added onto a stored row's `onto` (its other entries copied undecoded), into `out` from `at`; returns the offset after.
 * Throws SumLimitError when a sum, or a sum over all the row's models, passes 2^64 - 1: so no member day sum (member-day-sums.ts) can.
 */
export function packTotals(totals: TotalsByModel, out: Uint8Array, at: number, onto?: Uint8Array): number {
  const from = at;
  const { entries } = totals;
  const { sums } = entries;
  /** Each sum over every model, as a float: near the limit, checkAcrossModels adds them exactly. */
  const acrossModels = new Float64Array(SUMS);
  const mark = totals.newMark(); // marks the entries merged onto `onto`
  const marks = totals.marks;
  if (onto) {
    const reader = new VarintReader(onto);
    while (reader.at < onto.length) {
      const entryStart = reader.at;
      const id = reader.next();
      const entry = totals.find(id);
      if (entry === -1 || marks[entry] === mark) {
        // Byte by byte: a subarray per entry costs more than its few bytes.
        for (let i = 0; i < SUMS; i++) acrossModels[i] += reader.next();
        for (let q = entryStart; q < reader.at; q++) out[at++] = onto[q]!;
        continue;
      }
      marks[entry] = mark;
      at = writeVarint(out, at, id);
      for (let i = 0; i < SUMS; i++) {
        const start = reader.at;
        const total = reader.next() + sums.values[entry * SUMS + i]!;
        acrossModels[i] += total;
        if (reader.at - start <= NUMBER_BYTES && !sums.anyBig && total <= Number.MAX_SAFE_INTEGER) at = writeVarint(out, at, total);
        else at = writeBigVarint(out, at, readBigVarint(onto, start) + sums.total(entry, i));
      }
    }
    if (reader.at !== onto.length) throw new CorruptTotalsError(reader.at, onto.length);
  }
  // The entries not merged: each its model number, then its sums.
  for (let entry = 0; entry < entries.count; entry++) {
    if (marks[entry] === mark) continue;
    at = writeVarint(out, at, entries.model[entry]!);
    for (let i = 0; i < SUMS; i++) {
      acrossModels[i] += sums.values[entry * SUMS + i]!;
      if (sums.anyBig) at = writeBigVarint(out, at, sums.total(entry, i));
      else at = writeVarint(out, at, sums.values[entry * SUMS + i]!);
    }
  }
  if (sums.anyBig || acrossModels.some((sum) => sum >= 2 ** 63)) checkAcrossModels(out, from, at);
  return at;
}

function checkAcrossModels(packed: Uint8Array, at: number, end: number): void {
  const acrossModels = new Array<bigint>(SUMS).fill(0n);
  const reader = new VarintReader(packed, at);
  while (reader.at < end) {
    reader.next(); // the model id
    for (let i = 0; i < SUMS; i++) {
      acrossModels[i] += readBigVarint(packed, reader.at);
      reader.next();
    }
  }
  if (acrossModels.some((sum) => sum > SUM_LIMIT)) throw new SumLimitError();
}

/**
 * Below 2^53; in int32 arithmetic, not float division per byte (micro-unit sums are mostly past 2^31): a value past 2^31 first gives
 * its low 28 bits (four bytes), then the rest.
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

/** Throws SumLimitError past 2^64 - 1 (a sum's limit). */
function writeBigVarint(out: Uint8Array, at: number, value: bigint): number {
  if (value > SUM_LIMIT) throw new SumLimitError();
  while (value >= 0x80n) {
    out[at++] = Number(value & 0x7fn) | 0x80;
    value >>= 7n;
  }
  out[at++] = Number(value);
  return at;
}

/**
 * A read position in varints (one object a call, not a tuple per value): `next()` reads one, exact below 2^53 (readBigVarint reads a longer
 * one again), and moves past it. Past the end a byte is undefined: `!(byte >= 0x80)` stops there, where `byte < 0x80` would loop forever.
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

/** Each entry of a USAGE TEXT, `fields` integers each; a value past 15 digits as a bigint. */
export function forEachEntry(text: string, fields: number, entry: (values: Array<number | bigint>) => void): void {
  const values = new Array<number | bigint>(fields).fill(0);
  let field = 0;
  let value = 0;
  let from = 0;
  for (let at = 0; at <= text.length; at++) {
    const code = at < text.length ? text.charCodeAt(at) : SEMICOLON; // as if a ";" followed the last entry
    if (code >= 48 && code <= 57) {
      value = value * 10 + (code - 48);
      continue;
    }
    if ((code !== COMMA && code !== SEMICOLON) || field === fields) throw new Error(`usage text: unexpected ${JSON.stringify(text[at])} at ${at}`);
    values[field++] = at - from <= 15 ? value : BigInt(text.slice(from, at));
    value = 0;
    from = at + 1;
    if (code === SEMICOLON) {
      if (field !== fields) throw new Error(`usage text: ${field} values in the entry ending at ${at}`);
      entry(values);
      field = 0;
    }
  }
}

export function entryCount(text: string): number {
  let count = 1;
  for (let at = text.indexOf(";"); at !== -1; at = text.indexOf(";", at + 1)) count++;
  return count;
}

const COMMA = 44;
const SEMICOLON = 59;
