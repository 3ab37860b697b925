// The accumulation of a usage report: facts (usage-facts.ts) and rollup periods (usage-rollup.ts)
// summed per (bucket, group), exactly (numbers while below 2^53, then bigints), with the distinct
// members of each: the facts' members and the periods' member bitmaps put together.
import roaring from "roaring";
import { bucketIndexOf } from "./report-buckets.js";
import type { Grouping, GroupKey } from "./report-groups.js";
import type { TimeBucket } from "./local-time.js";
import type { UsageFact } from "./usage-facts.js";
import { BASIC, EVENTS, INPUT, ModelSums, OUTPUT, PAY_GO, SUMS } from "./usage-totals.js";

const { RoaringBitmap32 } = roaring;

/** A rollup period's figures for one model (or all), as stored (storage/usage-rollups.ts). */
export interface RollupFigures {
  modelId: number;
  sums: ModelSums;
  memberCount: number;
  /** A portable roaring bitmap of the member keys: needed unless the period is alone in its bucket. */
  members?: Uint8Array;
}

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
  /** The member bitmaps of the rollup periods added, with their counts. */
  bitmaps: Array<{ members?: Uint8Array; count: number }>;
}

export class ReportCells {
  private readonly cells: Map<string, Cell>[];

  constructor(private readonly buckets: readonly TimeBucket[], private readonly grouping: Grouping) {
    this.cells = buckets.map(() => new Map());
  }

  add(facts: readonly UsageFact[]): void {
    let bucket = -1;
    for (const fact of facts) {
      // Facts come mostly in time order (a page of member day sums all of one day): the last bucket first.
      const last = this.buckets[bucket];
      if (!last || fact.ts < last.start || fact.ts >= last.end) bucket = bucketIndexOf(this.buckets, fact.ts);
      if (bucket < 0) continue;
      const cells = this.cells[bucket]!;
      for (const key of this.grouping.keysOf(fact.memberKey, fact.modelId)) {
        let cell = cells.get(key.id);
        if (!cell) cells.set(key.id, (cell = newCell(key)));
        cell.sums.addValue(INPUT, fact.inputTokens);
        cell.sums.addValue(OUTPUT, fact.outputTokens);
        cell.sums.addValue(BASIC, fact.basicMicros);
        cell.sums.addValue(PAY_GO, fact.payGoMicros);
        cell.sums.add(EVENTS, fact.events ?? 1);
        cell.members.add(fact.memberKey);
      }
    }
  }

  /**
   * A rollup period that lies in bucket `bucket`. Only for groupings without members or departments:
   * a period's figures are the whole enterprise's.
   */
  addRollup(bucket: number, period: RollupFigures): void {
    const cells = this.cells[bucket]!;
    for (const key of this.grouping.keysOf(-1, period.modelId)) {
      let cell = cells.get(key.id);
      if (!cell) cells.set(key.id, (cell = newCell(key)));
      for (let i = 0; i < SUMS; i++) cell.sums.addValue(i, period.sums.exact(i));
      cell.bitmaps.push({ members: period.members, count: period.memberCount });
    }
  }

  /** A bucket's groups with events, in no particular order. */
  groups(bucket: number): GroupFigures[] {
    return [...this.cells[bucket]!.values()].map(({ key, sums, members, bitmaps }) => ({
      key,
      events: sums.total(EVENTS),
      activeMembers: distinctMembers(members, bitmaps),
      inputTokens: sums.total(INPUT),
      outputTokens: sums.total(OUTPUT),
      basicMicros: sums.total(BASIC),
      payGoMicros: sums.total(PAY_GO),
    }));
  }
}

function newCell(key: GroupKey): Cell {
  return { key, sums: new ModelSums(), members: new Set(), bitmaps: [] };
}

/** How many members in the set and the bitmaps together: a lone bitmap's stored count, else their union's size. */
function distinctMembers(members: ReadonlySet<number>, bitmaps: ReadonlyArray<{ members?: Uint8Array; count: number }>): number {
  if (bitmaps.length === 0) return members.size;
  if (bitmaps.length === 1 && members.size === 0) return bitmaps[0]!.count;
  const union = new RoaringBitmap32(members);
  for (const bitmap of bitmaps) {
    if (!bitmap.members) throw new Error("report cells: a period's members were not read, though it shares its bucket");
    union.orInPlace(RoaringBitmap32.deserialize(bitmap.members, "portable"));
  }
  return union.size;
}
