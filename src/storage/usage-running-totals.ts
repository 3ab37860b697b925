// The usage running totals: per member and per UTC day on which the member has events, one
// usage_running_total row holding the member's running totals per model, every event up to the end
// of that day, packed (see PACKED TOTALS in usage-sums-codec.ts). The totals over any
// run of whole days are then the difference of two rows per member (domain/usage-window.ts).
//
// An ingestion sums its new events per (member, day) in memory (DaySums), then, member by member
// in key order: reads the member's last row on or before its earliest new day and every row after
// it, and writes each of the days from that new day on again with the new events up to it added (a
// new day's row starts from the last stored row before it). Events of the current day, the usual
// case, rewrite one row a member; an event far in the past rewrites every later row of its member.
import { CompiledQuery } from "kysely";
import { TotalsByModel } from "../domain/usage-totals.js";
import { chunks, type BulkStore } from "./bulk-statements.js";
import { DaySums, type MemberDays } from "./usage-day-sums.js";
import { forEachStoredRow, packedBytes, packTotals } from "./usage-sums-codec.js";
import { grown } from "../domain/typed-arrays.js";

/** A stored row: its day and its packed totals. */
export interface StoredRow {
  day: number;
  totals: Uint8Array;
}

/** Adds held sums to usage_running_total; run inside the ingestion's transaction. */
export async function addToRunningTotals(database: BulkStore, sums: DaySums): Promise<void> {
  for (const chunk of chunks(sums.drain())) {
    const storedByMember = await readStoredRows(database, chunk.map(([memberKey, days]) => [memberKey, days[0]![0]]));
    const rows = new RowsByDay();
    for (const [memberKey, days] of chunk) {
      mergeDays(storedByMember.get(memberKey) ?? [], days, (day, totals, onto) => rows.add(memberKey, day, totals, onto));
    }
    await rows.write(database);
  }
}

/**
 * For each (member key, day) given (at most a chunk of them): the member's last stored row on
 * or before that day and every row after it, in day order (usually one row: today's, or the last
 * one before today), by member key.
 */
async function readStoredRows(database: BulkStore,
  memberDays: ReadonlyArray<readonly [memberKey: number, day: number]>): Promise<Map<number, StoredRow[]>> {
  const [found] = (await database.db.executeQuery<StoredRows>(CompiledQuery.raw(storedStatement(database, memberDays.length), memberDays.flat()))).rows;
  return splitStoredRows(found);
}

/**
 * Rows to store, gathered and then written (upserted) together, their bytes end to end in one
 * buffer. SQLite gets them in the table's order, by day, then member (they are made member by
 * member; an import's run of days for each of 512 members written in that order jumped between as
 * many day ranges of the table), by statements of up to 512 rows (chunks).
 */
class RowsByDay {
  private bytes = new Uint8Array(1 << 16);
  private used = 0;
  private members: number[] = [];
  private days: number[] = [];
  private ends: number[] = [];

  /** Adds a row of `totals` packed onto the packed totals `onto` (see packTotals); returns its bytes. */
  add(memberKey: number, day: number, totals: TotalsByModel, onto: Uint8Array | undefined): Uint8Array {
    const maxBytes = packedBytes(totals, onto);
    // `onto` may be an earlier row's bytes here: a grown buffer leaves them in the old one, intact.
    if (this.used + maxBytes > this.bytes.length) this.bytes = grown(this.bytes, this.used + maxBytes);
    const start = this.used;
    this.used = packTotals(totals, this.bytes, start, onto);
    this.members.push(memberKey);
    this.days.push(day);
    this.ends.push(this.used);
    return this.bytes.subarray(start, this.used);
  }

  async write(database: BulkStore): Promise<void> {
    const totals = (i: number) => this.bytes.subarray(i === 0 ? 0 : this.ends[i - 1]!, this.ends[i]!);
    const order = Array.from(this.days.keys());
    // Usually (an ingestion of today's events) one day, already in member order.
    if (this.days.some((day) => day !== this.days[0])) order.sort((a, b) => this.days[a]! - this.days[b]! || this.members[a]! - this.members[b]!);
    for (const part of chunks(order)) {
      const parameters: unknown[] = [];
      for (const i of part) parameters.push(this.members[i], this.days[i], totals(i));
      await database.db.executeQuery(CompiledQuery.raw(upsertStatement(database, part.length), parameters));
    }
  }
}

/**
 * The stored statement's one row: the rows found, as text ("member,day,length" each, joined by
 * commas), and their totals end to end, in the same order.
 */
interface StoredRows {
  rows: string | null;
  totals: Uint8Array | null;
}

/** Each member's stored rows, in day order. */
function splitStoredRows(found: StoredRows | undefined): Map<number, StoredRow[]> {
  const byMember = new Map<number, StoredRow[]>();
  if (!found?.rows || !found.totals) return byMember;
  const totals = found.totals;
  forEachStoredRow(totals, found.rows, 3, (fields, first, start, end) => {
    const memberKey = Number(fields[first]);
    const row = { day: Number(fields[first + 1]), totals: totals.subarray(start, end) };
    const list = byMember.get(memberKey);
    if (list) list.push(row);
    else byMember.set(memberKey, [row]);
  });
  for (const list of byMember.values()) list.sort((a, b) => a.day - b.day);
  return byMember;
}

/**
 * One member's rows after adding its new day sums: `stored` is its last row on or before its
 * earliest new day (if any) and every row after it, in day order. `write` stores a row, `totals`
 * added onto packed totals, in day order, and returns its bytes. A new day's row is the row before
 * it (stored, or just written) with the day's sums merged in, in packed form: the models the day
 * lacks are copied as they are (the usual ingestion, today's events, rewrites one row so; an
 * import, a run of days). A stored row on or after a new day is itself plus every new day's sums up to it.
 */
function mergeDays(stored: readonly StoredRow[], days: MemberDays, write: (day: number, totals: TotalsByModel, onto: Uint8Array | undefined) => Uint8Array): void {
  const added = new TotalsByModel(); // the new sums so far, kept while stored rows remain after them
  let previous: Uint8Array | undefined; // the row before the current day
  let s = 0;
  let d = 0;
  while (s < stored.length && stored[s]!.day < days[0]![0]) previous = stored[s++]!.totals;
  while (s < stored.length || d < days.length) {
    const storedDay = s < stored.length ? stored[s]!.day : Infinity;
    const newDay = d < days.length ? days[d]![0] : Infinity;
    if (newDay <= storedDay) {
      const sums = days[d++]![1].merged();
      if (s < stored.length) added.addTotals(sums);
      previous = newDay === storedDay ? write(newDay, added, stored[s++]!.totals) : write(newDay, sums, previous);
    } else {
      previous = write(storedDay, added, stored[s++]!.totals);
    }
  }
}

/**
 * For `members` members (parameters: each member's key and earliest new day): each member's last
 * row on or before its day and every row after it (usually one row: today's, or the last one before
 * today), returned as one row of two values (a blob per stored row would cost the driver a Buffer
 * each): the rows as text, and their totals end to end. The bound is correlated with the member
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

function upsertStatement({ db, texts }: BulkStore, rowCount: number): string {
  return texts.of("running totals: upsert", rowCount, (rows) => {
    const placeholder = { member_key: 0, day: 0, totals: new Uint8Array() };
    return db.insertInto("usage_running_total").values(Array.from({ length: rows }, () => placeholder))
      .onConflict((oc) => oc.columns(["member_key", "day"]).doUpdateSet((eb) => ({ totals: eb.ref("excluded.totals") })))
      .compile().sql;
  });
}
