// A usage query's sums: for a fixed list of members (each by its position) and every model met, the members' sums of that model as
// one ExactSums, a row a member. Flat, because objects per (member, model) lengthened the young-generation collections that set p99.
import { EVENTS, ExactSums } from "./usage-totals.js";

export class WindowSums {
  /** The model of each slot, in the order first met. */
  readonly modelIds: number[] = [];
  private readonly slots = new Map<number, number>();
  /** Per slot: each member's sums of its model. */
  private readonly columns: ExactSums[] = [];

  constructor(readonly memberCount: number) {}

  /** The members' sums of a model (a row a member), made when the model is first met. */
  of(modelId: number): ExactSums {
    let slot = this.slots.get(modelId);
    if (slot === undefined) {
      this.slots.set(modelId, (slot = this.modelIds.length));
      this.modelIds.push(modelId);
      this.columns.push(new ExactSums(this.memberCount));
    }
    return this.columns[slot]!;
  }

  /** Sum `index` of a member for the model in `slot`: a number while exact, else a bigint. */
  sum(slot: number, member: number, index: number): number | bigint {
    return this.columns[slot]!.exact(member, index);
  }

  /** Whether the member has events of the model in the window (totals subtracted for the days before it cancel out). */
  hasEvents(slot: number, member: number): boolean {
    return this.sum(slot, member, EVENTS) !== 0;
  }
}
