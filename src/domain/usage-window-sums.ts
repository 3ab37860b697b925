// A usage query's sums, an ExactSums per model with a row a member: objects per (member, model) lengthened the collections that set p99.
import { EVENTS, ExactSums } from "./usage-totals.js";

export class WindowSums {
  /** Slots in the order first met. */
  readonly modelIds: number[] = [];
  private readonly slots = new Map<number, number>();
  private readonly columns: ExactSums[] = [];

  constructor(readonly memberCount: number) {}

  of(modelId: number): ExactSums {
    let slot = this.slots.get(modelId);
    if (slot === undefined) {
      this.slots.set(modelId, (slot = this.modelIds.length));
      this.modelIds.push(modelId);
      this.columns.push(new ExactSums(this.memberCount));
    }
    return this.columns[slot]!;
  }

  /** A number while exact, else a bigint. */
  sum(slot: number, member: number, index: number): number | bigint {
    return this.columns[slot]!.exact(member, index);
  }

  /** Totals subtracted for the days before the window cancel out: only the event count tells. */
  hasEvents(slot: number, member: number): boolean {
    return this.sum(slot, member, EVENTS) !== 0;
  }
}
