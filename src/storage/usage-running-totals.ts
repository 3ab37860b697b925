// The usage running totals: one usage_running_total row per member and UTC day with events, holding the
// member's running totals per model through that day, packed (PACKED TOTALS in usage-sums-codec.ts), so
// that the totals over any run of whole days are two rows per member (domain/usage-window.ts).
import { CompiledQuery } from "kysely";
import { TotalsByModel } from "../domain/usage-totals.js";
import { chunks, type BulkStore } from "./bulk-statements.js";
import { DaySums, type MemberDays } from "./usage-day-sums.js";
import { addPackedTotals, forEachStoredRow, packedBytes, packTotals } from "./usage-sums-codec.js";
import { grown } from "../domain/typed-arrays.js";

/** A stored row: its day and its packed totals. */
export interface StoredRow {
  day: number;
  totals: Uint8Array;
}

/** Adds held sums to usage_running_total; run inside the ingestion's transaction. */
export async function addToRunningTotals(database: BulkStore, sums: DaySums): Promise<void> {
  // The rows of every chunk of members written together (each member is in one chunk), in full
  // statements of the table's order, unless they pass ROWS_HELD_BYTES (an event far in the past
  // rewrites every later row of its member). Sized for the usual rows, a member-day each, of up to
  // about 20 models: growing the buffer a doubling at a time cost an import more than its copies.
  const rows = new RowsByDay(Math.min(ROWS_HELD_BYTES, Math.max(1 << 16, sums.size * 512)));
  for (const chunk of chunks(sums.drain())) {
    const storedByMember = await readStoredRows(database, chunk.map(([memberKey, days]) => [memberKey, days[0]![0]]));
    for (const [memberKey, days] of chunk) {
      mergeDays(storedByMember.get(memberKey) ?? [], days, (day, totals, onto) =>
        rows.addWritten(memberKey, day, packedBytes(totals, onto), (out, at) => packTotals(totals, out, at, onto)));
    }
    if (rows.bytes > ROWS_HELD_BYTES) await rows.write(database);
  }
  await rows.write(database);
}

const ROWS_HELD_BYTES = 16 * 1024 * 1024;

/**
 * For each (member key, day) given (at most a chunk of them): the member's last stored row on
 * or before that day and every row after it, in day order (usually one row: today's, or the last
 * one before today), by member key.
 */
export async function readStoredRows(database: BulkStore,
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
export class RowsByDay {
  private buffer: Uint8Array<ArrayBuffer>;
  private used = 0;
  private members: number[] = [];
  private days: number[] = [];
  private ends: number[] = [];

  /** `expectedBytes`: about how many bytes the rows will take (the buffer grows past it). */
  constructor(expectedBytes = 1 << 16) {
    this.buffer = new Uint8Array(expectedBytes);
  }

  /** The bytes of the rows held. */
  get bytes(): number {
    return this.used;
  }

  /** Adds a row whose packed totals `write` puts into `out` from `at` (at most `maxBytes`), returning the offset after them. */
  addWritten(memberKey: number, day: number, maxBytes: number, write: (out: Uint8Array, at: number) => number): void {
    if (this.used + maxBytes > this.buffer.length) this.buffer = grown(this.buffer, this.used + maxBytes);
    this.used = write(this.buffer, this.used);
    this.members.push(memberKey);
    this.days.push(day);
    this.ends.push(this.used);
  }

  /** Writes the rows held, leaving none (the buffer stays, for the next rows). */
  async write(database: BulkStore): Promise<void> {
    const totals = (i: number) => this.buffer.subarray(i === 0 ? 0 : this.ends[i - 1]!, this.ends[i]!);
    const order = Array.from(this.days.keys());
    // Usually (an ingestion of today's events) one day, already in member order.
    if (this.days.some((day) => day !== this.days[0])) order.sort((a, b) => this.days[a]! - this.days[b]! || this.members[a]! - this.members[b]!);
    for (const part of chunks(order)) {
      const parameters: unknown[] = [];
      for (const i of part) parameters.push(this.members[i], this.days[i], totals(i));
      await database.db.executeQuery(CompiledQuery.raw(upsertStatement(database, part.length), parameters));
    }
    this.used = 0;
    this.members = [];
    this.days = [];
    this.ends = [];
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
 * earliest new day (if any) and every row after it, in day order. `write` gets each row to store
 * (its totals, valid until the next call), in day order. A single row (the usual ingestion:
 * today's) is the stored totals with the new sums merged in packed form; a run of rows (an import)
 * decodes the stored totals once and packs each day from the running sums.
 */
function mergeDays(stored: readonly StoredRow[], days: MemberDays, write: (day: number, totals: TotalsByModel, onto?: Uint8Array) => void): void {
  const added = new TotalsByModel(); // the new events up to the current day
  let base: Uint8Array | undefined; // the last stored totals up to the current day
  let current: TotalsByModel | undefined; // base plus added, once decoded for a run of new days
  let s = 0;
  let d = 0;
  while (s < stored.length && stored[s]!.day < days[0]![0]) base = stored[s++]!.totals;
  while (s < stored.length || d < days.length) {
    const storedDay = s < stored.length ? stored[s]!.day : Infinity;
    const newDay = d < days.length ? days[d]![0] : Infinity;
    const day = Math.min(storedDay, newDay);
    if (storedDay === day) {
      base = stored[s++]!.totals;
      current = undefined;
    }
    if (newDay === day) {
      const sums = days[d++]![1];
      // `added` is needed while stored rows remain (each starts `current` anew) or no `current` exists.
      if (!current || s < stored.length) sums.addTo(added);
      if (current) sums.addTo(current);
    }
    const last = s === stored.length && d === days.length;
    if (!current && !last) {
      current = new TotalsByModel();
      if (base) addPackedTotals(current, base);
      current.addTotals(added);
    }
    if (current) write(day, current);
    else write(day, added, base);
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
