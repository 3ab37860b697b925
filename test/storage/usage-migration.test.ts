// Migrations 20261123T070500 (framed usage cells), 20261123T070600 (running totals instead of
// cells) and 20261124T070000 (SQLite: running totals ordered by day) on a store written before them:
// the cells they find hold bare packed totals; afterwards the cells are gone, each member has one
// running-total row per day with events (made from the raw events once the migrations are done),
// and every window's sums are still those of the raw events.
import { Migrator, sql, type Kysely } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TotalsByModel } from "../../src/domain/usage-totals.js";
import { dayOf, planWindow } from "../../src/domain/usage-window.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { migrateToLatest, openDatabase, type Database } from "../../src/storage/database.js";
import { migrations } from "../../src/storage/migrations/index.js";
import { UsageRepository } from "../../src/storage/usage-repository.js";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/databases.js";
import { acme } from "../helpers/fixtures.js";
import { sumRows } from "../helpers/window-sums.js";

const DAY = 86_400;
/** The cells' tiers and periods as 20261123T070400 defined them (1970-01-05, day 4, was a Monday). */
const ROLLUP_TIERS = [49, 7, 1] as const;
const periodOf = (tierDays: number, day: number) => Math.floor((day + 3) / tierDays);
const MONDAY = 1_735_516_800; // 2024-12-30T00:00:00Z

describe.each(dialects)("usage cell frames and running totals migrations (%s)", (dialect) => {
  let testDb: TestDatabase;
  let database: Database;

  beforeAll(async () => {
    testDb = await createTestDatabase(dialect);
    database = openDatabase(testDb.url);
    const migrator = new Migrator({ db: database.db, provider: { getMigrations: async () => migrations } });
    const { error } = await migrator.migrateTo("20261123T070400-usage-by-day");
    if (error) throw error;
  });

  afterAll(async () => {
    await database?.close();
    await testDb?.drop();
  });

  it("replaces the bare cells by running totals; every window sums the raw events exactly", async () => {
    await importDirectory(database, acme);
    const [alice, bob] = await database.db.selectFrom("member").select(["member_key", "user_id"])
      .where("enterprise_id", "=", acme.enterprise.enterprise_id).orderBy("user_id").limit(2).execute();
    await sql`insert into usage_model (model_name, model_type, model_source) values ('m-a', 'Chat', 'Builtin'), ('m-b', 'CUE', 'Custom')`.execute(database.db);
    const models = await database.db.selectFrom("usage_model").select("model_id").orderBy("model_name").execute();
    const events = [
      { member: Number(alice!.member_key), model: Number(models[0]!.model_id), ts: MONDAY + 3600, values: [100, 20, 3_000_000, 0] },
      { member: Number(alice!.member_key), model: Number(models[0]!.model_id), ts: MONDAY + 9 * DAY + 60, values: [5, 6, 7, 8] },
      { member: Number(alice!.member_key), model: Number(models[1]!.model_id), ts: MONDAY + 30 * DAY, values: [1, 1, 0, 0] },
      { member: Number(bob!.member_key), model: Number(models[0]!.model_id), ts: MONDAY + 2 * DAY + 7, values: [9, 9, 9, 9] },
    ];
    // The events and their cells as 20261123T070400 wrote them: bare packed totals, no frame.
    const cells = new Map<string, TotalsByModel>();
    for (const [i, e] of events.entries()) {
      await database.db.insertInto("usage_event").values({
        day: dayOf(e.ts), member_key: e.member, ts: e.ts, event_id: `e${i}`, enterprise_id: acme.enterprise.enterprise_id, model_id: e.model,
        input_tokens: BigInt(e.values[0]!), output_tokens: BigInt(e.values[1]!), basic_micros: BigInt(e.values[2]!), pay_go_micros: BigInt(e.values[3]!),
      }).execute();
      for (const tierDays of ROLLUP_TIERS) {
        const key = `${tierDays}:${periodOf(tierDays, dayOf(e.ts))}:${e.member}`;
        const totals = cells.get(key) ?? new TotalsByModel();
        totals.addEvent(e.model, e.values[0]!, e.values[1]!, e.values[2]!, e.values[3]!);
        cells.set(key, totals);
      }
    }
    for (const [key, totals] of cells) {
      const [tierDays, period, member] = key.split(":").map(Number) as [number, number, number];
      await (database.db as Kysely<any>).insertInto("usage_cell").values({ tier_days: tierDays, period, member_key: member, totals: totals.pack() }).execute();
    }

    // The first three applied (later migrations follow them).
    expect((await migrateToLatest(database)).slice(0, 3))
      .toStrictEqual(["20261123T070500-usage-cell-frames", "20261123T070600-usage-running-totals", "20261124T070000-usage-running-totals-by-day"]);
    if (database.dialect === "sqlite") {
      const { rows: schema } = await sql<{ name: string; sql: string }>`select name, sql from sqlite_master where tbl_name = 'usage_running_total'`.execute(database.db);
      expect(schema.find((r) => r.name === "usage_running_total")?.sql).toMatch(/primary key \(day, member_key\)\) without rowid$/);
      expect(schema.find((r) => r.name === "usage_running_total_by_member")?.sql).toBe("CREATE UNIQUE INDEX usage_running_total_by_member on usage_running_total (member_key, day)");
    }
    const tables = database.dialect === "postgres"
      ? await sql<{ name: string }>`select tablename as name from pg_tables where schemaname = current_schema()`.execute(database.db)
      : await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(database.db);
    expect(tables.rows.map((r) => r.name)).not.toContain("usage_cell");
    const days = await database.db.selectFrom("usage_running_total").select(["member_key", "day"]).orderBy("member_key").orderBy("day").execute();
    const expectedDays = [...new Set(events.map((e) => `${e.member}:${dayOf(e.ts)}`))].map((k) => k.split(":").map(Number))
      .sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
    expect(days.map((r) => [Number(r.member_key), Number(r.day)])).toStrictEqual(expectedDays);

    const repository = new UsageRepository(database);
    const keys = [Number(alice!.member_key), Number(bob!.member_key)];
    const windows: Array<[number, number]> = [[MONDAY, MONDAY + 180 * DAY], [MONDAY + 3600, MONDAY + 9 * DAY + 61], [MONDAY + 2 * DAY, MONDAY + 31 * DAY],
      [MONDAY + 2 * DAY + 8, MONDAY + 30 * DAY + 1], [MONDAY - DAY + 1, MONDAY + 9 * DAY + 60]];
    for (const [start, end] of windows) {
      const expected = new Map<string, number[]>();
      for (const e of events.filter((e) => e.ts >= start && e.ts < end)) {
        const key = `${e.member}:${e.model}`;
        expected.set(key, (expected.get(key) ?? [0, 0, 0, 0]).map((v, i) => v + e.values[i]!));
      }
      const rows = sumRows(await repository.sumUsage(keys, planWindow(start, end)), keys);
      const actual = new Map(rows.map((r) => [`${r.member_key}:${r.model_id}`, [r.input_tokens, r.output_tokens, r.basic_micros, r.pay_go_micros]]));
      expect(actual, `window [${start}, ${end})`).toStrictEqual(expected);
    }
  });
});
