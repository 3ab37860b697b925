// The accumulation of a usage report: facts (usage-facts.ts) summed per (bucket, group), exactly
// (numbers while below 2^53, then bigints), with the distinct members of each.
import { bucketIndexOf } from "./report-buckets.js";
import type { Grouping, GroupKey } from "./report-groups.js";
import type { TimeBucket } from "./local-time.js";
import type { UsageFact } from "./usage-facts.js";
import { BASIC, EVENTS, INPUT, ModelSums, OUTPUT, PAY_GO } from "./usage-totals.js";

/** A (bucket, group)'s figures. */
export interface GroupFigures {
  key: GroupKey;
  events: bigint;
  activeMembers: number;
  inputTokens: bigint;
  outputTokens: bigint;
  basicMicros: bigint;
  payGoMicros: bigint;
}

interface Cell {
  key: GroupKey;
  sums: ModelSums;
  /** Distinct members: active members do not add up across cells, so each cell keeps its own. */
  members: Set<number>;
}

export class ReportCells {
  private readonly cells: Map<string, Cell>[];

  constructor(private readonly buckets: readonly TimeBucket[], private readonly grouping: Grouping) {
    this.cells = buckets.map(() => new Map());
  }

  add(facts: readonly UsageFact[]): void {
    for (const fact of facts) {
      const bucket = bucketIndexOf(this.buckets, fact.ts);
      if (bucket < 0) continue;
      const cells = this.cells[bucket]!;
      for (const key of this.grouping.keysOf(fact.memberKey, fact.modelId)) {
        let cell = cells.get(key.id);
        if (!cell) cells.set(key.id, (cell = { key, sums: new ModelSums(), members: new Set() }));
        cell.sums.addValue(INPUT, fact.inputTokens);
        cell.sums.addValue(OUTPUT, fact.outputTokens);
        cell.sums.addValue(BASIC, fact.basicMicros);
        cell.sums.addValue(PAY_GO, fact.payGoMicros);
        cell.sums.add(EVENTS, fact.events ?? 1);
        cell.members.add(fact.memberKey);
      }
    }
  }

  /** A bucket's groups with events, in no particular order. */
  groups(bucket: number): GroupFigures[] {
    return [...this.cells[bucket]!.values()].map(({ key, sums, members }) => ({
      key,
      events: sums.total(EVENTS),
      activeMembers: members.size,
      inputTokens: sums.total(INPUT),
      outputTokens: sums.total(OUTPUT),
      basicMicros: sums.total(BASIC),
      payGoMicros: sums.total(PAY_GO),
    }));
  }
}
