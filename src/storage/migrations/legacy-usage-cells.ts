// The usage rollup as migrations 20261123T070400 and 20261123T070500 built it, kept only for them
// (landed migrations are frozen): per member and Monday-aligned period of each tier (49, 7 and 1
// days), the per-model totals packed in one usage_cell row. Migration 20261123T070600 replaced
// these cells with running totals (../usage-running-totals.ts) and dropped the table.
import { CompiledQuery, sql, type Kysely } from "kysely";
import { dayOf } from "../../domain/usage-window.js";
import { TotalsByModel, cellTotals } from "../../domain/usage-totals.js";
import type { Database, Dialect } from "../database.js";
import { chunks, fromExact, readEvents } from "../usage-running-totals.js";

/** Rollup period lengths in days, longest first. Day 4 after the epoch (1970-01-05) was a Monday. */
export const ROLLUP_TIERS = [49, 7, 1] as const;
const MONDAY_OFFSET = 3;

/** The period of a tier that holds a UTC day (days since the epoch). */
export const periodOf = (tierDays: number, day: number) => Math.floor((day + MONDAY_OFFSET) / tierDays);

type LegacyDatabase = { db: Kysely<any>; dialect: Dialect; direct?: Database["direct"] };

/** Sums of new events per (tier, period, member), not yet in usage_cell. */
export class CellSums {
  /** (tier index, period) packed in one number -> member_key -> totals. */
  private readonly byPeriod = new Map<number, Map<number, TotalsByModel>>();
  private count = 0;

  /** How many cells are held. */
  get size(): number {
    return this.count;
  }

  /** The member maps of each tier's period holding `lastDay`: events mostly come in time order. */
  private lastDay = Number.NaN;
  private lastMaps: Array<Map<number, TotalsByModel>> = [];

  /** Adds one new event (positional: no object per event on an import's hot path). */
  add(memberKey: number, modelId: number, day: number, inputTokens: number | bigint, outputTokens: number | bigint,
    basicMicros: number | bigint, payGoMicros: number | bigint): void {
    if (day !== this.lastDay) this.selectDay(day);
    for (const members of this.lastMaps) {
      let totals = members.get(memberKey);
      if (!totals) {
        members.set(memberKey, (totals = new TotalsByModel()));
        this.count++;
      }
      totals.addEvent(modelId, inputTokens, outputTokens, basicMicros, payGoMicros);
    }
  }

  private selectDay(day: number): void {
    this.lastDay = day;
    this.lastMaps = ROLLUP_TIERS.map((tierDays, t) => {
      // Periods stay below 2^24 until the year 47000.
      const key = t * 2 ** 24 + periodOf(tierDays, day);
      let members = this.byPeriod.get(key);
      if (!members) this.byPeriod.set(key, (members = new Map()));
      return members;
    });
  }

  /** The held sums in the table's key order, leaving this empty. */
  drain(): Array<{ tierDays: number; period: number; members: Array<[number, TotalsByModel]> }> {
    const out = [...this.byPeriod.entries()].sort((a, b) => a[0] - b[0]).map(([key, members]) => ({
      tierDays: ROLLUP_TIERS[Math.floor(key / 2 ** 24)]!,
      period: key % 2 ** 24,
      members: [...members.entries()].sort((a, b) => a[0] - b[0]),
    }));
    this.byPeriod.clear();
    this.count = 0;
    this.lastDay = Number.NaN;
    this.lastMaps = [];
    return out;
  }
}

/** Adds held sums to usage_cell; run inside the ingestion's transaction. */
export async function addToCells(database: LegacyDatabase, sums: CellSums): Promise<void> {
  const { db, dialect, direct } = database;
  const upsertOne = direct?.(upsertStatement(db, dialect, 1));
  for (const { tierDays, period, members } of sums.drain()) {
    for (const chunk of chunks(members)) {
      const keys = chunk.map(([memberKey]) => memberKey);
      const stored = direct
        ? direct(selectStatement(db, dialect, keys.length)).all([tierDays, period, ...keys]) as StoredCell[]
        : await db.selectFrom("usage_cell").select(["member_key", "totals"])
          .where("tier_days", "=", tierDays).where("period", "=", period).where("member_key", "in", keys).execute();
      const storedByMember = new Map(stored.map((row) => [Number(row.member_key), row.totals]));
      const parameters: unknown[] = [];
      for (const [memberKey, totals] of chunk) {
        const before = storedByMember.get(memberKey);
        if (before) totals.addPacked(cellTotals(before));
        // A copy for PostgreSQL's parameters (packCell's buffer is reused); SQLite binds it at once.
        if (upsertOne) upsertOne.run([tierDays, period, memberKey, totals.packCell(memberKey)]);
        else parameters.push(tierDays, period, memberKey, totals.packCell(memberKey).slice());
      }
      if (!upsertOne) await db.executeQuery(CompiledQuery.raw(upsertStatement(db, dialect, chunk.length), parameters));
    }
  }
}

interface StoredCell {
  member_key: number;
  totals: Uint8Array;
}

const upsertSql = new Map<string, string>();

function upsertStatement(db: Kysely<any>, dialect: Dialect, rows: number): string {
  const key = `${dialect}:${rows}`;
  let text = upsertSql.get(key);
  if (!text) {
    const placeholder = { tier_days: 0, period: 0, member_key: 0, totals: new Uint8Array() };
    text = db.insertInto("usage_cell").values(Array.from({ length: rows }, () => placeholder))
      .onConflict((oc) => oc.columns(["tier_days", "period", "member_key"]).doUpdateSet({ totals: sql`excluded.totals` }))
      .compile().sql;
    upsertSql.set(key, text);
  }
  return text;
}

const selectSql = new Map<string, string>();

/** The stored cells of one period for `members` members (parameters: tier_days, period, member keys). */
function selectStatement(db: Kysely<any>, dialect: Dialect, members: number): string {
  const key = `${dialect}:${members}`;
  let text = selectSql.get(key);
  if (!text) {
    text = db.selectFrom("usage_cell").select(["member_key", "totals"]).where("tier_days", "=", 0).where("period", "=", 0)
      .where("member_key", "in", Array.from({ length: members }, () => 0)).compile().sql;
    selectSql.set(key, text);
  }
  return text;
}

/**
 * Makes every cell anew from the stored events, a week of events at a time (through the day-first
 * order): for migrations that create or change the cells.
 */
export async function rebuildCells(database: LegacyDatabase): Promise<void> {
  const { db, dialect } = database;
  await db.deleteFrom("usage_cell").execute();
  const bounds = await db.selectFrom("usage_event").select((eb) => [eb.fn.min("day").as("first"), eb.fn.max("day").as("last")]).executeTakeFirst();
  if (bounds?.first === null || bounds?.first === undefined) return;
  for (let from = Number(bounds.first); from <= Number(bounds.last); from += 7) {
    const sums = new CellSums();
    for (const row of await readEvents({ db, dialect }, from, from + 7)) {
      sums.add(Number(row.member_key), Number(row.model_id), dayOf(Number(row.ts)),
        fromExact(row.i), fromExact(row.o), fromExact(row.b), fromExact(row.p));
    }
    await addToCells({ db, dialect }, sums);
  }
}
