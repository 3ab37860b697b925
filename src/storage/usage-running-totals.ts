// Running totals: a row per member and UTC day with events, its totals per model through that day, so whole days are two rows a member.
import { CompiledQuery } from "kysely";
import { LRUCache } from "lru-cache";
import { SumEntries, TotalsByModel } from "../domain/usage-totals.js";
import type { EventValue } from "../domain/usage-event.js";
import { chunks, insertText, type BulkStore } from "./bulk-statements.js";
import { forEachStoredRow, packedBytes, packTotals } from "./usage-sums-codec.js";
import { grown } from "../domain/typed-arrays.js";
import { pushTo } from "../domain/list-maps.js";
import type { UsageRunningTotalTable } from "./schema.js";

type StoredRow = Pick<UsageRunningTotalTable, "day" | "totals">;

/** Adds new events' day sums inside the ingestion's transaction; a member whose latest row `latest` holds is not read from the store. */
export async function addToRunningTotals(database: BulkStore, latest: LatestRows, sums: DaySums): Promise<void> {
  const keys = sums.keys();
  const runs = memberRuns(keys);
  // All chunks' rows are written together, in full statements in table order, unless they pass ROWS_HELD_BYTES (an old event rewrites every
  // later row of its member). Sized up front for rows (a member-day each) of up to about 20 models, not grown a doubling at a time.
  const rows = new RowsByDay(new Uint8Array(Math.min(ROWS_HELD_BYTES, Math.max(1 << 16, keys.length * 512))));
  const added = new TotalsByModel(); // reused member after member
  for (const chunk of chunks(runs)) {
    const known = chunk.map((run) => latest.from(run.memberKey, run.firstDay));
    const unknown = chunk.filter((_, i) => known[i] === undefined);
    const stored = unknown.length === 0 ? new Map<number, StoredRow[]>()
      : await readStoredRows(database, unknown.map((run) => [run.memberKey, run.firstDay]));
    chunk.forEach((run, i) => writeMemberRows(run, known[i] ?? stored.get(run.memberKey) ?? [], sums, keys, rows, latest, added));
    if (rows.bytes > ROWS_HELD_BYTES) await rows.write(database);
  }
  await rows.write(database);
}

/**
 * The latest row this repository wrote for each member, kept (not read back) while no other ingestion commits between (`begin` gets the
 * store's count of ingestions). Least recently used rows go first past LATEST_ROWS_BYTES.
 */
export class LatestRows {
  private readonly rows = new LRUCache<number, StoredRow>({ maxSize: LATEST_ROWS_BYTES, sizeCalculation: (row) => row.totals.length + 64 });
  private ingestions = -1;

  /** When another ingestion came between, the rows held may be stale. */
  begin(ingestions: number): void {
    if (ingestions !== this.ingestions + 1) this.rows.clear();
    this.ingestions = ingestions;
  }

  /** An ingestion failed (its rows were never committed), or the store's rows were deleted. */
  clear(): void {
    this.rows.clear();
    this.ingestions = -1;
  }

  /** As readStoredRows for (member, day), when the latest row is known and on or before `day`: that row. */
  from(memberKey: number, day: number): StoredRow[] | undefined {
    const row = this.rows.get(memberKey);
    return row && row.day <= day ? [row] : undefined;
  }

  set(memberKey: number, row: StoredRow): void {
    this.rows.set(memberKey, row);
  }
}

const LATEST_ROWS_BYTES = 64 * 1024 * 1024;
const ROWS_HELD_BYTES = 16 * 1024 * 1024;

/** A member's day sums: their range [start, end) in the keys, and its earliest day. */
interface MemberRun {
  memberKey: number;
  firstDay: number;
  start: number;
  end: number;
}

function memberRuns(keys: Float64Array): MemberRun[] {
  const runs: MemberRun[] = [];
  for (let k = 0; k < keys.length; k++) {
    const memberKey = memberOfKey(keys[k]!);
    if (runs[runs.length - 1]?.memberKey === memberKey) runs[runs.length - 1]!.end = k + 1;
    else runs.push({ memberKey, firstDay: dayOfKey(keys[k]!), start: k, end: k + 1 });
  }
  return runs;
}

/**
 * Each day with new events, and each stored day after the first of them, becomes the last stored row on or before it plus the new events
 * up to it. `stored`: the last row on or before the first new day, if any, and every row after it, in day order.
 */
function writeMemberRows(run: MemberRun, stored: readonly StoredRow[], sums: DaySums, keys: Float64Array, rows: RowsByDay, latest: LatestRows,
  added: TotalsByModel): void {
  added.clear();
  let s = 0;
  while (s < stored.length && stored[s]!.day < run.firstDay) s++;
  let base = s > 0 ? stored[s - 1]!.totals : undefined;
  const { entries } = sums;
  let k = run.start;
  let newDay = dayOfKey(keys[k]!);
  for (;;) {
    const storedDay = s < stored.length ? stored[s]!.day : Infinity;
    const day = Math.min(storedDay, newDay);
    if (day === Infinity) break;
    if (storedDay === day) base = stored[s++]!.totals;
    if (newDay === day) {
      for (let e = sums.firstOf(keys[k]!); e !== -1; e = entries.next[e]!) added.entries.sums.addRow(added.entryFor(entries.model[e]!), entries.sums, e);
      newDay = ++k < run.end ? dayOfKey(keys[k]!) : Infinity;
    }
    rows.addWritten(run.memberKey, day, packedBytes(added, base), (out, at) => packTotals(added, out, at, base));
  }
  // The last row written (one at least: its first new day's) is the member's latest: every stored row after its first new day was written again.
  latest.set(run.memberKey, rows.last());
}

/** For each (member key, day), at most 512: its member's last stored row on or before that day and every later row, in day order, by member key. */
async function readStoredRows(database: BulkStore,
  memberDays: ReadonlyArray<readonly [memberKey: number, day: number]>): Promise<Map<number, StoredRow[]>> {
  // A power of two members, so few texts are ever prepared: the rest are member -1, which has no rows.
  const size = 2 ** Math.ceil(Math.log2(memberDays.length));
  const parameters = memberDays.flat();
  while (parameters.length < 2 * size) parameters.push(-1, 0);
  const [found] = (await database.db.executeQuery<StoredRows>(CompiledQuery.raw(storedStatement(database, size), parameters))).rows;
  const byMember = new Map<number, StoredRow[]>();
  const totals = found?.totals;
  if (!found?.rows || !totals) return byMember;
  forEachStoredRow(totals, found.rows, 3, (fields, first, start, end) => {
    const memberKey = Number(fields[first]);
    pushTo(byMember, memberKey, { day: Number(fields[first + 1]), totals: totals.subarray(start, end) });
  });
  for (const list of byMember.values()) list.sort((a, b) => a.day - b.day);
  return byMember;
}

/** Rows to upsert, their bytes end to end in one buffer, written in the table's order (day, member), not jumping between day ranges. */
class RowsByDay {
  bytes = 0;
  private members: number[] = [];
  private days: number[] = [];
  private ends: number[] = [];

  constructor(private buffer: Uint8Array<ArrayBuffer>) {}

  /** `write` puts the packed totals (at most `maxBytes`) into `out` from `at` and returns the offset after them. */
  addWritten(memberKey: number, day: number, maxBytes: number, write: (out: Uint8Array, at: number) => number): void {
    if (this.bytes + maxBytes > this.buffer.length) this.buffer = grown(this.buffer, this.bytes + maxBytes);
    this.bytes = write(this.buffer, this.bytes);
    this.members.push(memberKey);
    this.days.push(day);
    this.ends.push(this.bytes);
  }

  last(): StoredRow {
    const i = this.ends.length - 1;
    return { day: this.days[i]!, totals: this.buffer.slice(i === 0 ? 0 : this.ends[i - 1]!, this.ends[i]!) };
  }

  async write(database: BulkStore): Promise<void> {
    const totals = (i: number) => this.buffer.subarray(i === 0 ? 0 : this.ends[i - 1]!, this.ends[i]!);
    const order = Array.from(this.days.keys());
    // Usually (an ingestion of today's events) one day, already in member order.
    if (this.days.some((day) => day !== this.days[0])) order.sort((a, b) => this.days[a]! - this.days[b]! || this.members[a]! - this.members[b]!);
    for (const part of chunks(order)) {
      const parameters: unknown[] = [];
      for (const i of part) parameters.push(this.members[i], this.days[i], totals(i));
      const text = insertText(database, "usage_running_total", ["member_key", "day", "totals"], ["member_key", "day"], ["totals"], part.length);
      await database.db.executeQuery(CompiledQuery.raw(text, parameters));
    }
    this.bytes = 0;
    this.members = [];
    this.days = [];
    this.ends = [];
  }
}

/** "member,day,length" per row found, and their totals end to end in that order. */
interface StoredRows {
  rows: string | null;
  totals: Uint8Array | null;
}

/**
 * One row of text and bytes: a blob per stored row would cost the driver a Buffer each. The day bound is correlated with the member
 * list, so each member's rows are one index range.
 */
function storedStatement({ dialect, texts }: BulkStore, memberCount: number): string {
  return texts.of("running totals: stored", memberCount, (members) => {
    const postgres = dialect === "postgres";
    const pairs = Array.from({ length: members }, (_, i) => (postgres
      ? `($${2 * i + 1}${i === 0 ? "::bigint" : ""}, $${2 * i + 2}${i === 0 ? "::integer" : ""})`
      : "(?, ?)")).join(", ");
    const [rows, totals] = postgres
      ? ["string_agg(concat_ws(',', t.member_key, t.day, length(t.totals)), ',' order by t.member_key, t.day)",
        "string_agg(t.totals, ''::bytea order by t.member_key, t.day)"]
      : ["group_concat(t.member_key || ',' || t.day || ',' || length(t.totals), ',')", "cast(group_concat(t.totals, '') as blob)"]; // one pass: both in the same order
    return `with m(k, d) as (values ${pairs})
      select ${rows} as rows, ${totals} as totals from m join usage_running_total t on t.member_key = m.k
        and t.day >= coalesce((select max(p.day) from usage_running_total p where p.member_key = m.k and p.day <= m.d), m.d)`;
  });
}

/** New events' sums per (member, day, model) in typed arrays (SumEntries), no object per sum. */
export class DaySums {
  /** (member, day), as daySumKey → its first entry; entries of a (member, day) are chained by `entries.next` (-1 ends a chain). */
  private readonly firstEntry = new Map<number, number>();
  /** The last event's key and first entry: events come in key order, a member's day together, so most skip the Map. */
  private lastKey = -1;
  private lastFirst = -1;
  readonly entries = new SumEntries();

  get size(): number {
    return this.firstEntry.size;
  }

  /** Values as numbers (the API's, at most 10^12) or bigints (callers below it). */
  add(member: number, model: number, day: number, inputTokens: EventValue, outputTokens: EventValue, basicMicros: EventValue, payGoMicros: EventValue): void {
    const key = daySumKey(member, day);
    const first = key === this.lastKey ? this.lastFirst : this.firstEntry.get(key) ?? -1;
    const entries = this.entries;
    let entry = first;
    let last = -1;
    while (entry !== -1 && entries.model[entry] !== model) entry = entries.next[(last = entry)]!;
    if (entry === -1) {
      entry = entries.add(model);
      if (last === -1) this.firstEntry.set(key, entry);
      else entries.next[last] = entry;
    }
    this.lastKey = key;
    this.lastFirst = first === -1 ? entry : first;
    entries.sums.addEvent(entry, inputTokens, outputTokens, basicMicros, payGoMicros);
  }

  /** By member, then day. */
  keys(): Float64Array {
    return Float64Array.from(this.firstEntry.keys()).sort();
  }

  firstOf(key: number): number {
    return this.firstEntry.get(key)!;
  }

  clear(): void {
    this.firstEntry.clear();
    this.lastKey = -1;
    this.entries.sums.clear();
  }
}

/** A (member, day)'s key: keys sort by member, then day. Exact (below 2^53) for member keys below 2^31. */
export function daySumKey(member: number, day: number): number {
  if (member >= 2 ** 31) throw new Error(`day sums: member key ${member} is past 2^31 - 1`);
  return member * DAY_SPAN + day;
}

export function memberOfKey(key: number): number {
  return Math.floor(key / DAY_SPAN);
}

export function dayOfKey(key: number): number {
  return key % DAY_SPAN;
}

/** Days a member's keys span: past the last day of year 9999 (the latest timestamp an event may have). */
const DAY_SPAN = 2 ** 22;
