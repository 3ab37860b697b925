// Per-model usage totals (input tokens, output tokens, basic and pay-go micro-units, and the number
// of events) and their packed form: one entry per model, each six unsigned LEB128 varints (model_id,
// then the five sums), in no particular order (a model may even repeat: sums add up). The `totals`
// of a usage_running_total row are the packed form framed by the member's key and its length (CELL
// FRAMES). One row per member and day, whatever the number of models, keeps a query to two rows a
// member; varints keep the rows small (typically 15-20 bytes a model), and so the pages an
// ingestion rewrites. The event count tells a model with no events in a window (its totals cancel
// out) from one whose events all carried zeros.
//
// Sums stay JS numbers while they are exact (the hot path: no BigInt per event); a sum that passes
// 2^53 moves into a bigint. A stored total is at most 2^64 - 1, the largest uint64 the API can
// answer: every window's sum is at most its member's running total, so every answer fits.

import { formatMicros } from "./money.js";

export const SUM_LIMIT = 2n ** 64n - 1n;
/** Sums per model: input tokens, output tokens, basic micros, pay-go micros, events. */
export const SUMS = 5;
export const INPUT = 0;
export const OUTPUT = 1;
export const BASIC = 2;
export const PAY_GO = 3;
export const EVENTS = 4;
/** The longest entry: a 32-bit model id (5 bytes) and five 64-bit sums (10 bytes each). */
export const MAX_ENTRY_BYTES = 5 + SUMS * 10;
/** Varints of up to 7 bytes (49 bits) are decoded as numbers; longer ones as bigints. */
export const NUMBER_BYTES = 7;

/** What a caller is told when an ingestion would pass SUM_LIMIT. */
export const SUM_LIMIT_MESSAGE = `events: a member's running total for a model would pass the uint64 limit (${SUM_LIMIT}); nothing was recorded`;

export class SumLimitError extends Error {
  constructor() {
    super(`a usage running total would pass the uint64 limit (${SUM_LIMIT})`);
  }
}

/** The sums of one model (see SUMS): numbers while exact, bigints past 2^53. */
export class ModelSums {
  readonly values = [0, 0, 0, 0, 0];
  big: bigint[] | undefined;
  /** The last packOnto call that merged these sums into stored ones. */
  stamp = 0;

  add(index: number, value: number): void {
    const next = this.values[index]! + value;
    if (next <= Number.MAX_SAFE_INTEGER && next >= -Number.MAX_SAFE_INTEGER) {
      this.values[index] = next;
      return;
    }
    this.addBig(index, BigInt(value));
  }

  addValue(index: number, value: number | bigint): void {
    if (typeof value === "number") this.add(index, value);
    else this.addBig(index, value);
  }

  addBig(index: number, value: bigint): void {
    this.big ??= [0n, 0n, 0n, 0n, 0n];
    this.big[index]! += BigInt(this.values[index]!) + value;
    this.values[index] = 0;
  }

  total(index: number): bigint {
    return BigInt(this.values[index]!) + (this.big?.[index] ?? 0n);
  }

  /** The sum as a number while it is exact, else as a bigint. */
  exact(index: number): number | bigint {
    if (!this.big) return this.values[index]!;
    const total = this.total(index);
    return total <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(total) : total;
  }
}

/** a + b, exactly: a number while the sum stays below 2^53. */
function exactSum(a: number | bigint, b: number | bigint): number | bigint {
  if (typeof a === "number" && typeof b === "number" && a + b <= Number.MAX_SAFE_INTEGER) return a + b;
  return BigInt(a) + BigInt(b);
}

/**
 * A model's amounts as the API prints them: a Custom model's are all zero (only built-in models are
 * charged), and the total is basic + pay-go, exactly. Usually one of the two is zero: the total is
 * then the other's string, one string fewer.
 */
export function modelAmounts(model: { model_source: string }, basic: number | bigint, payGo: number | bigint) {
  const charged = model.model_source !== "Custom";
  const basicAmount = charged ? formatMicros(basic) : ZERO_AMOUNT;
  const payGoAmount = charged ? formatMicros(payGo) : ZERO_AMOUNT;
  const totalAmount = !charged ? ZERO_AMOUNT : payGo === 0 ? basicAmount : basic === 0 ? payGoAmount : formatMicros(exactSum(basic, payGo));
  return { basicAmount, payGoAmount, totalAmount };
}

const ZERO_AMOUNT = formatMicros(0);

/** Sums per model id. */
export class TotalsByModel {
  readonly models = new Map<number, ModelSums>();
  /** packOnto calls so far: tells the models one call has merged from those it has not (ModelSums.stamp). */
  private packs = 0;

  private sumsOf(modelId: number): ModelSums {
    let sums = this.models.get(modelId);
    if (!sums) this.models.set(modelId, (sums = new ModelSums()));
    return sums;
  }

  /** One event (or, with `events` -1, one taken away): values as numbers (the API's, at most 10^12) or bigints (callers below it). */
  addEvent(modelId: number, inputTokens: number | bigint, outputTokens: number | bigint, basicMicros: number | bigint, payGoMicros: number | bigint,
    events = 1): void {
    const sums = this.sumsOf(modelId);
    sums.addValue(0, inputTokens);
    sums.addValue(1, outputTokens);
    sums.addValue(2, basicMicros);
    sums.addValue(3, payGoMicros);
    sums.add(EVENTS, events);
  }

  /** Adds another's sums. */
  addTotals(other: TotalsByModel): void {
    for (const [modelId, from] of other.models) {
      const sums = this.sumsOf(modelId);
      for (let i = 0; i < SUMS; i++) sums.add(i, from.values[i]!);
      if (from.big) for (let i = 0; i < SUMS; i++) sums.addBig(i, from.big[i]!);
    }
  }

  /**
   * Adds packed totals (`packed` from `at` to `end`), or with `sign` -1 takes them away. `modelIds`,
   * if given, maps the packed model numbers to model ids (an import's worker numbers models by file).
   */
  addPacked(packed: Uint8Array, at = 0, end = packed.length, modelIds?: ArrayLike<number>, sign: 1 | -1 = 1): void {
    while (at < end) {
      // model_id, then the sums; each a varint.
      let value = 0;
      let scale = 1;
      let start = at;
      for (;;) {
        const byte = packed[at++]!;
        value += (byte & 0x7f) * scale;
        scale *= 128;
        if (!(byte >= 0x80)) break;
      }
      const sums = this.sumsOf(modelIds ? modelIds[value]! : value);
      for (let i = 0; i < SUMS; i++) {
        value = 0;
        scale = 1;
        start = at;
        for (;;) {
          const byte = packed[at++]!;
          value += (byte & 0x7f) * scale;
          scale *= 128;
          if (!(byte >= 0x80)) break;
        }
        if (at - start <= NUMBER_BYTES) sums.add(i, sign * value);
        else sums.addBig(i, sign === 1 ? readBigVarint(packed, start) : -readBigVarint(packed, start));
      }
    }
    if (at !== end) throw new CorruptTotalsError(at, end);
  }

  /** The most bytes packCellInto writes, with `onto` as given. */
  cellBytes(onto?: Uint8Array): number {
    return FRAME_ROOM + (onto?.length ?? 0) + this.models.size * MAX_ENTRY_BYTES;
  }

  /**
   * Writes the stored form of a member's cell (see CELL FRAMES below) into `out` from `at`, which has
   * cellBytes(onto) bytes of room: the packed totals framed by the member's key and their length;
   * with `onto` (bare packed totals, a stored row's), those totals plus these. Returns the offset
   * after it; throws SumLimitError past 2^64 - 1.
   */
  packCellInto(out: Uint8Array, at: number, memberKey: number, onto?: Uint8Array): number {
    // The totals go in after room for the header, whose length they decide, then move up to it.
    const totalsAt = at + FRAME_ROOM;
    const end = onto ? this.packOnto(onto, out, totalsAt) : this.packInto(out, totalsAt);
    const headerEnd = writeVarint(out, writeVarint(out, at, memberKey), end - totalsAt);
    out.copyWithin(headerEnd, totalsAt, end);
    return headerEnd + end - totalsAt;
  }

  /** Writes the packed totals into `out` from `at`; returns the offset after them. */
  private packInto(out: Uint8Array, at: number): number {
    for (const [id, sums] of this.models) at = packEntry(out, at, id, sums);
    return at;
  }

  /**
   * Writes `packed` plus these totals into `out` from `at`, without decoding what needs no change:
   * the entry of a model held here gets its sums added, every other entry is copied as it is, and
   * the models `packed` lacks follow. Returns the offset after them. (Decoding a stored row into
   * objects and packing it again cost about 20 µs for 20 models; an ingestion does it for every
   * member it touches.)
   */
  private packOnto(packed: Uint8Array, out: Uint8Array, at: number): number {
    // Varints are read inline here (no tuple per value, as readVarint returns): the hot path.
    const stamp = ++this.packs; // marks the models merged by this call
    let p = 0;
    while (p < packed.length) {
      const entryStart = p;
      let id = 0;
      let scale = 1;
      for (;;) {
        const byte = packed[p++]!;
        id += (byte & 0x7f) * scale;
        scale *= 128;
        if (!(byte >= 0x80)) break;
      }
      const sums = this.models.get(id);
      if (!sums || sums.stamp === stamp) {
        // Copied byte by byte while it is scanned: a subarray per entry to copy (about 17,000 a
        // 1,000-event RPC batch) cost more than the bytes.
        for (let q = entryStart; q < p; q++) out[at++] = packed[q]!;
        for (let i = 0; i < SUMS; i++) {
          let byte;
          do {
            byte = packed[p++]!;
            out[at++] = byte;
          } while (byte >= 0x80);
        }
        continue;
      }
      sums.stamp = stamp;
      at = writeVarint(out, at, id);
      for (let i = 0; i < SUMS; i++) {
        const start = p;
        let stored = 0;
        scale = 1;
        for (;;) {
          const byte = packed[p++]!;
          stored += (byte & 0x7f) * scale;
          scale *= 128;
          if (!(byte >= 0x80)) break;
        }
        const total = stored + sums.values[i]!;
        if (p - start <= NUMBER_BYTES && !sums.big && total <= Number.MAX_SAFE_INTEGER) {
          at = writeVarint(out, at, total);
        } else {
          const big = readBigVarint(packed, start) + sums.total(i);
          if (big > SUM_LIMIT) throw new SumLimitError();
          at = writeBigVarint(out, at, big);
        }
      }
    }
    if (p !== packed.length) throw new CorruptTotalsError(p, packed.length);
    for (const [id, sums] of this.models) if (sums.stamp !== stamp) at = packEntry(out, at, id, sums);
    return at;
  }
}

/**
 * CORRUPT. Packed totals that end inside an entry (or a frame that claims more bytes than there are)
 * are refused instead of read on: every varint loop here stops at a byte past the buffer
 * (`undefined >= 0x80` is false), and the reader checks that its last entry ended exactly at its end.
 * (A loop waiting for `byte < 0x80` never stopped on such bytes: one corrupt stored row would have
 * held the server's thread for good.) Only this code writes packed totals; this guards the store.
 */
export class CorruptTotalsError extends Error {
  constructor(at: number, end: number) {
    super(`usage totals: corrupt packed totals (an entry ends at byte ${at}, the data at ${end})`);
  }
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

/**
 * CELL FRAMES. A stored cell is framed: varint member_key, varint byte length, then the packed totals.
 * The frame makes cells read together self-describing, so a statement concatenates every cell it
 * reads into one blob with no GROUP BY (measured with the earlier rollup cells: 1.7 ms for ~1,050
 * cells against 2.7 ms grouped per member), and the query splits it (WindowSums.addCells). A cell is a
 * usage_running_total row's `totals`.
 */

/** Room kept before the totals for a frame's header: two varints below 2^53 (8 bytes each at most). */
const FRAME_ROOM = 16;

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

/** Reads a varint below 2^53 at `at`: its value and the offset after it. */
export function readVarint(packed: Uint8Array, at: number): [value: number, next: number] {
  let value = 0;
  let scale = 1;
  for (;;) {
    const byte = packed[at++]!;
    value += (byte & 0x7f) * scale;
    scale *= 128;
    if (!(byte >= 0x80)) return [value, at];
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
