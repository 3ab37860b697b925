// A usage query's sums, flat: for a fixed list of members (each by its position in the list) and every
// model met, the five sums of SUMS in one Float64Array per model; a sum past 2^53 keeps its excess as a
// bigint. Flat because an object per (member, model), a Map entry and a row object each cost 1.1 MB of
// a 100-member query's 2.2 MB of allocation, and lengthened the young-generation collections that set
// its p99; a column of numbers is one object, its values outside the collected heap.
import { EVENTS, SUMS, narrowed } from "./usage-totals.js";


export class WindowSums {
  /** The model of each slot, in the order first met. */
  readonly modelIds: number[] = [];
  private readonly slots = new Map<number, number>();
  /** Per slot: the sums of each member (SUMS values from member * SUMS). */
  private readonly columns: Float64Array[] = [];
  /** Per slot: the bigint part of sums past 2^53, by offset in the column (none while every sum is a number). */
  private readonly bigs: Array<Map<number, bigint> | undefined> = [];

  constructor(readonly memberCount: number) {}

  /** The slot of a model, made when the model is first met. */
  slotOf(modelId: number): number {
    let slot = this.slots.get(modelId);
    if (slot === undefined) {
      slot = this.modelIds.length;
      this.slots.set(modelId, slot);
      this.modelIds.push(modelId);
      this.columns.push(new Float64Array(this.memberCount * SUMS));
      this.bigs.push(undefined);
    }
    return slot;
  }

  /** Adds a value (a number within ±2^53, or a bigint) to sum `index` of a member for the model in `slot`. */
  add(slot: number, member: number, index: number, value: number | bigint): void {
    const at = member * SUMS + index;
    if (typeof value === "number") this.addNumber(slot, at, value);
    else this.addBig(slot, at, value);
  }

  /** Sum `index` of a member for the model in `slot`: a number while exact, else a bigint. */
  sum(slot: number, member: number, index: number): number | bigint {
    const at = member * SUMS + index;
    const value = this.columns[slot]![at]!;
    const big = this.bigs[slot]?.get(at);
    if (big === undefined) return value;
    return narrowed(big + BigInt(value));
  }

  /** Whether the member has events of the model in the window (totals subtracted for the days before it cancel out). */
  hasEvents(slot: number, member: number): boolean {
    return this.sum(slot, member, EVENTS) !== 0;
  }

  /** Adds a number within ±2^53 to the sum at offset `at` (member * SUMS + index) of the model in `slot`. */
  addNumber(slot: number, at: number, value: number): void {
    const column = this.columns[slot]!;
    const next = column[at]! + value;
    if (next <= Number.MAX_SAFE_INTEGER && next >= -Number.MAX_SAFE_INTEGER) column[at] = next;
    else this.addBig(slot, at, BigInt(value));
  }

  /** Adds a bigint to the sum at offset `at` of the model in `slot`. */
  addBig(slot: number, at: number, value: bigint): void {
    const column = this.columns[slot]!;
    const bigs = (this.bigs[slot] ??= new Map());
    bigs.set(at, (bigs.get(at) ?? 0n) + BigInt(column[at]!) + value);
    column[at] = 0;
  }
}
