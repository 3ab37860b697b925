// A usage report's exact sums and distinct members per (bucket, group), from (member, model) sums, members' day sums and periods.
import roaring from "roaring";
import type { Grouping, GroupKey, MemberGroups } from "./report-groups.js";
import type { TimeBucket } from "./local-time.js";
import { BASIC, EVENTS, INPUT, ExactSums, OUTPUT, PAY_GO, SUMS, type MemberModelSums } from "./usage-totals.js";
import { grown } from "./typed-arrays.js";

const { RoaringBitmap32 } = roaring;

/** A period's figures for one group: a rollup row's, or a day the report's day cache keeps. */
export interface PeriodFigures {
  modelId: number;
  departmentId?: string;
  sums: ExactSums;
  row: number;
  memberCount: number;
  /** A portable roaring bitmap of the member keys: needed unless the period is alone in its bucket. */
  members?: Uint8Array;
}

/** A column of a day's member sums: unsigned integers in the narrowest width that holds them. */
export type SumColumn = Uint8Array | Uint16Array | Uint32Array | BigUint64Array;

/** Each member's sums of one day of the layout, in key order (storage/member-day-sums.ts). */
export interface MemberSumsOfDay {
  count: number;
  keys: Uint32Array;
  /** In SUMS order. */
  columns: SumColumn[];
}

/** A group's figures: its sums, row `row` of `sums`, and its distinct members. */
export interface GroupFigures {
  key: GroupKey;
  activeMembers: number;
  sums: ExactSums;
  row: number;
}

/** More (bucket, group) cells than a report may answer. */
export class FiguresPastBound extends Error {}

/** Per group while a day's member sums are added: the five sums and the member count. */
const PENDING = SUMS + 1;

export class ReportCells {
  /** Per bucket, by group index. */
  private readonly cells: Cell[][];
  private readonly own = new OwnRows();
  /** Scratch for addMemberSums: a day's five columns as numbers, one after another. */
  private daySums = new Float64Array(0);
  /** Scratch for addMemberSums: per group index, the day's five sums and member count. */
  private pending = new Float64Array(0);

  /** Cells made so far: one past `maxCells` is FiguresPastBound, so a report over the bound is refused before the rest of its work. */
  private made = 0;

  constructor(readonly buckets: readonly TimeBucket[], private readonly grouping: Grouping, private readonly maxCells = Infinity) {
    this.cells = buckets.map(() => []);
  }

  private newCell(key: GroupKey): Cell {
    if (++this.made > this.maxCells) throw new FiguresPastBound();
    return new Cell(key, this.own);
  }

  addPairs(bucket: number, pairs: readonly MemberModelSums[]): void {
    const cells = this.cells[bucket]!;
    for (const { memberKey, modelId, sums, row } of pairs) {
      for (const key of this.grouping.keysOf(memberKey, modelId)) {
        const cell = (cells[key.index] ??= this.newCell(key));
        cell.sums.addRow(cell.row, sums, row);
        if (!this.grouping.byMember) cell.addMember(memberKey);
      }
    }
  }

  /** `alone`: the day is all of its bucket, so members are counted, not kept. */
  addMemberSums(bucket: number, day: MemberSumsOfDay, alone: boolean): void {
    const { count, keys, columns } = day;
    // Numbers summed over a day stay exact: at most 2^21 members of 32-bit values each.
    if (count < 2 ** 21 && columns.every((column) => !(column instanceof BigUint64Array))) {
      if (this.daySums.length < SUMS * count) this.daySums = new Float64Array(SUMS * count);
      const sums = this.daySums;
      columns.forEach((column, i) => sums.set(column as Exclude<SumColumn, BigUint64Array>, i * count));
      for (let from = 0; (from = addDaySums(keys, count, sums, this.grouping.allModelGroups, this.pendingForEveryGroup(), from)) < count;) {
        this.grouping.learnAllModelGroups(keys.subarray(from));
      }
    } else {
      this.grouping.learnAllModelGroups(keys);
      const pending = this.pendingForEveryGroup();
      forEachMemberGroup(keys, this.grouping.allModelGroups, (m, group) => {
        const cell = this.cellOf(bucket, group);
        for (let i = 0; i < SUMS; i++) cell.sums.addValue(cell.row, i, columns[i]![m]!);
        pending[group * PENDING + SUMS]!++;
      });
    }
    if (!alone && !this.grouping.byMember) forEachMemberGroup(keys, this.grouping.allModelGroups, (m, group) => this.cellOf(bucket, group).addMember(keys[m]!));
    const pending = this.pending;
    for (let index = 0; index < this.grouping.byIndex.length; index++) {
      const at = index * PENDING;
      if (pending[at + SUMS] === 0) continue;
      const cell = this.cellOf(bucket, index);
      for (let i = 0; i < SUMS; i++) cell.sums.add(cell.row, i, pending[at + i]!);
      if (alone) cell.addPeriod(pending[at + SUMS]!);
      pending.fill(0, at, at + PENDING);
    }
  }

  private pendingForEveryGroup(): Float64Array {
    const length = this.grouping.byIndex.length * PENDING;
    if (this.pending.length < length) this.pending = grown(this.pending, length);
    return this.pending;
  }

  private cellOf(bucket: number, group: number): Cell {
    return (this.cells[bucket]![group] ??= this.newCell(this.grouping.byIndex[group]!));
  }

  /** Not for groupings by member: a period is a whole group's. */
  addPeriod(bucket: number, period: PeriodFigures): void {
    const cell = this.cellOf(bucket, this.grouping.periodKey(period.modelId, period.departmentId ?? "").index);
    cell.sums.addRow(cell.row, period.sums, period.row);
    cell.addPeriod(period.memberCount, period.members);
  }

  /** A bucket's groups as periods, their members a bitmap when `withMembers`. */
  periods(bucket: number, withMembers: boolean): PeriodFigures[] {
    return this.cells[bucket]!.filter((cell) => cell !== undefined).map((cell) => {
      const { key, sums, row } = cell;
      const union = withMembers ? cell.union() : undefined;
      return { modelId: key.modelId, departmentId: key.departmentId, sums, row, memberCount: union?.size ?? cell.memberCount(), members: union?.serialize("portable") };
    });
  }

  /** How many (bucket, group) figures the groups of each member have: per member key, -1 for groups of no member. */
  figuresByMember(): Map<number, number> {
    const figures = new Map<number, number>();
    for (const cells of this.cells) cells.forEach(({ key }) => figures.set(key.memberKey, (figures.get(key.memberKey) ?? 0) + 1));
    return figures;
  }

  /** Unordered; each figure reads its cell's sums, not a copy. */
  groups(bucket: number): GroupFigures[] {
    return this.cells[bucket]!.filter((cell) => cell !== undefined)
      .map((cell) => ({ key: cell.key, activeMembers: this.grouping.byMember ? 1 : cell.memberCount(), sums: cell.sums, row: cell.row }));
  }
}

/**
 * Adds each member's five day sums (`sums`: five columns of `count`, SUMS order) and a count of one to `pending` (per group: PENDING numbers)
 * for each of its groups in `table`, from member `from` on; returns the position of the first member `table` lacks, or `count`.
 * A function of typed arrays alone so it stays compiled whatever the report does: a fresh report's objects would deoptimize a method's loop.
 */
function addDaySums(keys: Uint32Array, count: number, sums: Float64Array, table: MemberGroups, pending: Float64Array, from: number): number {
  const { keys: known, starts, groups } = table;
  let at = 0; // in `known`: both lists are in key order, and it ends with a key above every member's
  for (let m = from; m < count; m++) {
    const memberKey = keys[m]!;
    while (known[at]! < memberKey) at++;
    if (known[at] !== memberKey) return m;
    for (let g = starts[at]!; g < starts[at + 1]!; g++) {
      const slot = groups[g]! * PENDING;
      pending[slot + INPUT] += sums[m]!;
      pending[slot + OUTPUT] += sums[count + m]!;
      pending[slot + BASIC] += sums[2 * count + m]!;
      pending[slot + PAY_GO] += sums[3 * count + m]!;
      pending[slot + EVENTS] += sums[4 * count + m]!;
      pending[slot + SUMS]!++;
    }
  }
  return count;
}

/** Each (member position in `keys`, group number); every member must be in `table`. */
function forEachMemberGroup(keys: Uint32Array, table: MemberGroups, visit: (m: number, group: number) => void): void {
  const { keys: known, starts, groups } = table;
  let at = 0;
  for (let m = 0; m < keys.length; m++) {
    while (known[at]! < keys[m]!) at++;
    if (known[at] !== keys[m]) throw new Error(`report cells: member ${keys[m]} is not in the members' table`);
    for (let g = starts[at]!; g < starts[at + 1]!; g++) visit(m, groups[g]!);
  }
}

class Cell {
  /**
   * Its sums: a row of its own, never a statement's (the day cache keeps cells' periods, and a row of a statement's table would keep all
   * of that table).
   */
  readonly sums: ExactSums;
  readonly row: number;
  /**
   * The keys of its pairs and of member days not alone in their bucket, repeats included (active members do not add up across cells): made
   * distinct once, at the end. Made at the first key: most cells of kept days or periods get none.
   */
  private members: KeyList | undefined;
  /** The periods added (rollup periods, kept days, member days alone in their bucket): how many, the first one's member count. */
  private periods = 0;
  private firstCount = 0;
  /** The members' bitmaps of the periods that came with one (fewer than `periods`: one came alone in its bucket, its count all there is). */
  private bitmaps: Uint8Array[] | undefined;

  constructor(readonly key: GroupKey, own: OwnRows) {
    this.sums = own.withRoom();
    this.row = this.sums.newRow();
  }

  addMember(memberKey: number): void {
    (this.members ??= new KeyList()).push(memberKey);
  }

  addPeriod(memberCount: number, members?: Uint8Array): void {
    if (this.periods++ === 0) this.firstCount = memberCount;
    if (members) (this.bitmaps ??= []).push(members);
  }

  /** A lone period's stored count, else the size of the union. */
  memberCount(): number {
    return this.periods === 1 && !this.members ? this.firstCount : this.union().size;
  }

  union(): InstanceType<typeof RoaringBitmap32> {
    if ((this.bitmaps?.length ?? 0) < this.periods) throw new Error("report cells: a period's members were not read, though it shares its bucket");
    const union = this.members?.distinct() ?? new RoaringBitmap32();
    for (const bytes of this.bitmaps ?? []) union.orInPlace(RoaringBitmap32.deserialize(bytes, "portable"));
    return union;
  }
}

/** Rows for cells' own sums, in tables of OWN_ROWS rows made as they fill; never grown, as a grown table's off-heap copies stall the collector. */
class OwnRows {
  private table: ExactSums | undefined;

  withRoom(): ExactSums {
    if (this.table === undefined || this.table.rowCount === OWN_ROWS) this.table = new ExactSums(OWN_ROWS);
    return this.table;
  }
}

const OWN_ROWS = 1024;

class KeyList {
  private keys = new Uint32Array(16);
  private count = 0;

  push(memberKey: number): void {
    if (this.count === this.keys.length) this.keys = grown(this.keys);
    this.keys[this.count++] = memberKey;
  }

  distinct(): InstanceType<typeof RoaringBitmap32> {
    return new RoaringBitmap32(this.keys.subarray(0, this.count));
  }
}
