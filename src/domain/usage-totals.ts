// Per-model usage totals: input tokens, output tokens, basic and pay-go micro-units, and the number
// of events. The event count tells a model with no events in a window (its totals cancel out) from
// one whose events all carried zeros. Their byte form is storage/usage-sums-codec.ts's.
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
/** What a caller is told when an ingestion would pass SUM_LIMIT. */
export const SUM_LIMIT_MESSAGE = `events: a member's running total for a model, or a member's sum over all models of one day, would pass the uint64 limit (${SUM_LIMIT}); nothing was recorded`;

export class SumLimitError extends Error {
  constructor() {
    super(`a usage running total would pass the uint64 limit (${SUM_LIMIT})`);
  }
}

/** The sums of one model (see SUMS): numbers while exact, bigints past 2^53. */
export class ModelSums {
  readonly values = [0, 0, 0, 0, 0];
  big: bigint[] | undefined;
  /** The TotalsByModel.newMark of the last merge of these sums into stored ones (usage-sums-codec.ts). */
  mark = 0;

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
    const value = BigInt(this.values[index]!);
    return this.big ? value + this.big[index]! : value;
  }

  /** One event (or, with `events` -1, one taken away): values as numbers (the API's, at most 10^12) or bigints (callers below it). */
  addEvent(inputTokens: number | bigint, outputTokens: number | bigint, basicMicros: number | bigint, payGoMicros: number | bigint, events = 1): void {
    this.addValue(INPUT, inputTokens);
    this.addValue(OUTPUT, outputTokens);
    this.addValue(BASIC, basicMicros);
    this.addValue(PAY_GO, payGoMicros);
    this.add(EVENTS, events);
  }

  /** The sum as a number while it is exact, else as a bigint. */
  exact(index: number): number | bigint {
    if (!this.big) return this.values[index]!;
    return narrowed(this.total(index));
  }
}

const MAX_SAFE_BIG = BigInt(Number.MAX_SAFE_INTEGER);

/** An exact sum as a number while that is exact (within ±2^53), else as the bigint. */
export function narrowed(total: bigint): number | bigint {
  return total <= MAX_SAFE_BIG && total >= -MAX_SAFE_BIG ? Number(total) : total;
}

/** An integer in decimal text as its exact value: a number up to 15 digits, else a bigint. */
export function decimalValue(text: string): number | bigint {
  return text.length <= 15 ? Number(text) : BigInt(text);
}

/** a + b, exactly: a number while the sum stays below 2^53. */
export function exactSum(a: number | bigint, b: number | bigint): number | bigint {
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

/** One (member, model)'s sums over a window, as the database adds them (UsageRepository.memberModelSums). */
export interface MemberModelSums {
  memberKey: number;
  modelId: number;
  sums: ModelSums;
}

/** Sums per model id. */
export class TotalsByModel {
  readonly models = new Map<number, ModelSums>();
  /** Marks handed out: tell the models one merge has handled from those it has not (ModelSums.mark). */
  private marks = 0;

  /** The sums of a model, made (all zero) when first asked for. */
  sumsOf(modelId: number): ModelSums {
    let sums = this.models.get(modelId);
    if (!sums) this.models.set(modelId, (sums = new ModelSums()));
    return sums;
  }

  /** One event of a model (or, with `events` -1, one taken away), as ModelSums.addEvent. */
  addEvent(modelId: number, inputTokens: number | bigint, outputTokens: number | bigint, basicMicros: number | bigint, payGoMicros: number | bigint,
    events = 1): void {
    this.sumsOf(modelId).addEvent(inputTokens, outputTokens, basicMicros, payGoMicros, events);
  }

  /** Adds another's sums. */
  addTotals(other: TotalsByModel): void {
    for (const [modelId, from] of other.models) {
      const sums = this.sumsOf(modelId);
      for (let i = 0; i < SUMS; i++) sums.add(i, from.values[i]!);
      if (from.big) for (let i = 0; i < SUMS; i++) sums.addBig(i, from.big[i]!);
    }
  }

  /** A mark no model's sums carry yet. */
  newMark(): number {
    return ++this.marks;
  }
}
