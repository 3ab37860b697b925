// Per-model usage totals (input tokens, output tokens, basic and pay-go micro-units) and their packed
// form, the `totals` of one usage_cell row: one entry per model, 36 bytes each, little-endian
// (model_id u32, then the four sums as u64). One row per member and period, whatever the number of
// models, is what keeps a 180-day query to a few dozen rows per member.
//
// Sums stay JS numbers while they are exact (the hot path: no BigInt per event); a sum that passes
// 2^53 moves into a bigint. A stored sum is at most 2^63 - 1, the store's limit since the start.

export const SUM_LIMIT = 2n ** 63n - 1n;
const ENTRY_BYTES = 36;
const TWO_32 = 4_294_967_296;
/** A high word below this keeps hi * 2^32 + lo below 2^53: exact as a number. */
const SAFE_HIGH = 2 ** 21;

export class SumLimitError extends Error {
  constructor() {
    super(`a usage sum would pass the store's 64-bit limit (${SUM_LIMIT})`);
  }
}

/** The four sums of one model: numbers while exact, bigints past 2^53. */
export class ModelSums {
  readonly values = [0, 0, 0, 0];
  big: bigint[] | undefined;

  add(index: number, value: number): void {
    const next = this.values[index]! + value;
    if (next <= Number.MAX_SAFE_INTEGER) {
      this.values[index] = next;
      return;
    }
    this.addBig(index, BigInt(value));
  }

  addBig(index: number, value: bigint): void {
    this.big ??= [0n, 0n, 0n, 0n];
    this.big[index]! += BigInt(this.values[index]!) + value;
    this.values[index] = 0;
  }

  total(index: number): bigint {
    return BigInt(this.values[index]!) + (this.big?.[index] ?? 0n);
  }
}

/** Sums per model id. */
export class TotalsByModel {
  readonly models = new Map<number, ModelSums>();

  private sumsOf(modelId: number): ModelSums {
    let sums = this.models.get(modelId);
    if (!sums) this.models.set(modelId, (sums = new ModelSums()));
    return sums;
  }

  /** One event's values (each far below 2^53: see usage-event.ts). */
  addEvent(modelId: number, inputTokens: number, outputTokens: number, basicMicros: number, payGoMicros: number): void {
    const sums = this.sumsOf(modelId);
    sums.add(0, inputTokens);
    sums.add(1, outputTokens);
    sums.add(2, basicMicros);
    sums.add(3, payGoMicros);
  }

  /** Adds packed totals (a usage_cell's `totals`). */
  addPacked(packed: Uint8Array): void {
    const view = new DataView(packed.buffer, packed.byteOffset, packed.byteLength);
    for (let offset = 0; offset + ENTRY_BYTES <= packed.byteLength; offset += ENTRY_BYTES) {
      const sums = this.sumsOf(view.getUint32(offset, true));
      for (let i = 0; i < 4; i++) {
        const at = offset + 4 + i * 8;
        const low = view.getUint32(at, true);
        const high = view.getUint32(at + 4, true);
        if (high < SAFE_HIGH) sums.add(i, high * TWO_32 + low);
        else sums.addBig(i, (BigInt(high) << 32n) | BigInt(low));
      }
    }
  }

  /** Adds another set of totals. */
  addAll(other: TotalsByModel): void {
    for (const [modelId, theirs] of other.models) {
      const sums = this.sumsOf(modelId);
      for (let i = 0; i < 4; i++) {
        if (theirs.big) sums.addBig(i, theirs.total(i));
        else sums.add(i, theirs.values[i]!);
      }
    }
  }

  /** The packed form, models in id order; throws SumLimitError past 2^63 - 1. */
  pack(): Uint8Array {
    const ids = [...this.models.keys()].sort((a, b) => a - b);
    const packed = new Uint8Array(ids.length * ENTRY_BYTES);
    const view = new DataView(packed.buffer);
    let offset = 0;
    for (const id of ids) {
      const sums = this.models.get(id)!;
      view.setUint32(offset, id, true);
      for (let i = 0; i < 4; i++) {
        const at = offset + 4 + i * 8;
        if (sums.big) {
          const total = sums.total(i);
          if (total > SUM_LIMIT) throw new SumLimitError();
          view.setBigUint64(at, total, true);
        } else {
          const value = sums.values[i]!;
          view.setUint32(at, value % TWO_32, true);
          view.setUint32(at + 4, Math.floor(value / TWO_32), true);
        }
      }
      offset += ENTRY_BYTES;
    }
    return packed;
  }
}
