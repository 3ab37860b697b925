// Exact usage sums. A member's stored total is at most 2^64 - 1 (the API's uint64), so every answer of one member's fits; a sum over
// members may pass it (answerCount).
import { invalidParameter } from "./errors.js";
import { formatMicros } from "./money.js";
import { grown } from "./typed-arrays.js";

export const SUM_LIMIT = 2n ** 64n - 1n;

/** A count as the API answers it, a uint64: past 2^64 - 1 (a sum over many members can be), a 4001 naming the field and the limit. */
export function answerCount(value: number | bigint, field: string): bigint {
  const count = BigInt(value);
  if (count > SUM_LIMIT) {
    throw invalidParameter(`${field}: the sum ${count} is past ${SUM_LIMIT}, the largest an answer holds; ask for shorter buckets or group by member`);
  }
  return count;
}

/** Input tokens, output tokens, basic micros, pay-go micros, and events (which tell no events from events of zeros). */
export const SUMS = 5;
export const INPUT = 0;
export const OUTPUT = 1;
export const BASIC = 2;
export const PAY_GO = 3;
export const EVENTS = 4;
export const SUM_LIMIT_MESSAGE = `events: a member's running total for a model, or over all its models, would pass the uint64 limit (${SUM_LIMIT}); nothing was recorded`;

export class SumLimitError extends Error {
  constructor() {
    super(`a usage running total would pass the uint64 limit (${SUM_LIMIT})`);
  }
}

/**
 * The one exact-sum type: SUMS to a row, at `values[row * SUMS + i]`, no object per sum, so hundreds of thousands cost the collector
 * nothing. A sum is a number (no BigInt per event) until it passes ±2^53; then its excess moves into a bigint kept by offset.
 */
export class ExactSums {
  values: Float64Array<ArrayBuffer>;
  /** By offset; undefined while no sum is past 2^53. */
  private big: Map<number, bigint> | undefined;
  rowCount = 0;

  constructor(rows = 1) {
    this.values = new Float64Array(rows * SUMS);
  }

  /** All zero. */
  newRow(): number {
    if (this.values.length < (this.rowCount + 1) * SUMS) this.values = grown(this.values, (this.rowCount + 1) * SUMS);
    return this.rowCount++;
  }

  /** Then `values` alone are not all of it: read with exact or total. */
  get anyBig(): boolean {
    return this.big !== undefined;
  }

  /** A number within ±2^53, negative to take away. */
  add(row: number, i: number, value: number): void {
    const at = row * SUMS + i;
    const sum = this.values[at]! + value;
    if (sum <= Number.MAX_SAFE_INTEGER && sum >= -Number.MAX_SAFE_INTEGER) this.values[at] = sum;
    else this.addBig(row, i, BigInt(value));
  }

  addBig(row: number, i: number, value: bigint): void {
    const at = row * SUMS + i;
    this.big ??= new Map();
    this.big.set(at, (this.big.get(at) ?? 0n) + BigInt(this.values[at]!) + value);
    this.values[at] = 0;
  }

  addValue(row: number, i: number, value: number | bigint): void {
    if (typeof value === "number") this.add(row, i, value);
    else this.addBig(row, i, value);
  }

  /** Values as numbers (the API's, at most 10^12) or bigints (callers below it). */
  addEvent(row: number, inputTokens: number | bigint, outputTokens: number | bigint, basicMicros: number | bigint, payGoMicros: number | bigint): void {
    this.addValue(row, INPUT, inputTokens);
    this.addValue(row, OUTPUT, outputTokens);
    this.addValue(row, BASIC, basicMicros);
    this.addValue(row, PAY_GO, payGoMicros);
    this.add(row, EVENTS, 1);
  }

  addRow(row: number, from: ExactSums, fromRow: number): void {
    for (let i = 0; i < SUMS; i++) this.addValue(row, i, from.exact(fromRow, i));
  }

  /** A number while it is exact, else a bigint. */
  exact(row: number, i: number): number | bigint {
    const at = row * SUMS + i;
    const big = this.big?.get(at);
    return big === undefined ? this.values[at]! : narrowed(big + BigInt(this.values[at]!));
  }

  total(row: number, i: number): bigint {
    const at = row * SUMS + i;
    const sum = this.values[at]!;
    // BigInt of an int32 is far cheaper than BigInt of a float.
    const value = sum <= 0x7fffffff && sum >= -0x80000000 ? BigInt(sum | 0) : BigInt(sum);
    const big = this.big?.get(at);
    return big === undefined ? value : value + big;
  }

  clear(): void {
    this.values.fill(0, 0, this.rowCount * SUMS);
    this.big = undefined;
    this.rowCount = 0;
  }
}

const MAX_SAFE_BIG = BigInt(Number.MAX_SAFE_INTEGER);

function narrowed(total: bigint): number | bigint {
  return total <= MAX_SAFE_BIG && total >= -MAX_SAFE_BIG ? Number(total) : total;
}

/** A number up to 15 digits, else a bigint. */
export function decimalValue(text: string): number | bigint {
  return text.length <= 15 ? Number(text) : BigInt(text);
}

/** A number while the sum stays below 2^53. */
export function exactSum(a: number | bigint, b: number | bigint): number | bigint {
  if (typeof a === "number" && typeof b === "number" && a + b <= Number.MAX_SAFE_INTEGER) return a + b;
  return BigInt(a) + BigInt(b);
}

/** A model's amounts as the API prints them: a Custom model's all zero (only built-in models are charged), the total basic + pay-go. */
export function modelAmounts(model: { model_source: string }, basic: number | bigint, payGo: number | bigint) {
  const charged = model.model_source !== "Custom";
  const basicAmount = charged ? formatMicros(basic) : ZERO_AMOUNT;
  const payGoAmount = charged ? formatMicros(payGo) : ZERO_AMOUNT;
  const totalAmount = !charged ? ZERO_AMOUNT : payGo === 0 ? basicAmount : basic === 0 ? payGoAmount : formatMicros(exactSum(basic, payGo));
  return { basicAmount, payGoAmount, totalAmount };
}

const ZERO_AMOUNT = formatMicros(0);

export interface MemberModelSums {
  memberKey: number;
  modelId: number;
  /** A table the statement's groups share. */
  sums: ExactSums;
  row: number;
}

/** Entries of sums (a row each), each with a model and the next entry of its chain (-1 ends it). */
export class SumEntries {
  model = new Uint32Array(1024);
  next = new Int32Array(1024);
  readonly sums = new ExactSums(1024);

  get count(): number {
    return this.sums.rowCount;
  }

  /** Ends its chain: the caller links it. */
  add(model: number): number {
    const entry = this.sums.newRow();
    if (entry === this.model.length) {
      this.model = grown(this.model);
      this.next = grown(this.next);
    }
    this.model[entry] = model;
    this.next[entry] = -1;
    return entry;
  }
}

/** Sums per model id in typed arrays: made, cleared and made again without garbage. */
export class TotalsByModel {
  readonly entries = new SumEntries();
  /** By model id below DIRECT_MODEL_IDS: its entry, or -1; larger ids in `otherEntries`. */
  private entryOf = new Int32Array(64).fill(-1);
  private readonly otherEntries = new Map<number, number>();
  marks = new Int32Array(64);
  private lastMark = 0;

  find(modelId: number): number {
    if (modelId >= DIRECT_MODEL_IDS) return this.otherEntries.get(modelId) ?? -1;
    return modelId < this.entryOf.length ? this.entryOf[modelId]! : -1;
  }

  entryFor(modelId: number): number {
    let entry = this.find(modelId);
    if (entry !== -1) return entry;
    entry = this.entries.add(modelId);
    if (modelId >= DIRECT_MODEL_IDS) this.otherEntries.set(modelId, entry);
    else {
      if (modelId >= this.entryOf.length) this.entryOf = grown(this.entryOf, modelId + 1, -1);
      this.entryOf[modelId] = entry;
    }
    return entry;
  }

  /** A mark no entry carries yet: one pass tells the entries it has handled (`marks`) from the others. */
  newMark(): number {
    if (this.marks.length < this.entries.count) this.marks = grown(this.marks, this.entries.count);
    return ++this.lastMark;
  }

  clear(): void {
    for (let entry = 0; entry < this.entries.count; entry++) {
      const modelId = this.entries.model[entry]!;
      if (modelId < DIRECT_MODEL_IDS) this.entryOf[modelId] = -1;
    }
    this.otherEntries.clear();
    this.entries.sums.clear();
  }
}

/** Model ids found through an array (model ids are a dictionary's, small); larger ones through a Map. */
const DIRECT_MODEL_IDS = 1 << 16;
