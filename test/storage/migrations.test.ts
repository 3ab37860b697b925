// The migrations on an empty database: the baseline makes every table with its seed rows, all or
// nothing; a second run applies nothing; undoing it leaves the database empty again. Later
// migrations keep the data they find.
import { Migrator, NO_MIGRATIONS, sql, type Kysely } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { migrateToLatest, openDatabase, type Database } from "../../src/storage/database.js";
import { migrations } from "../../src/storage/migrations/index.js";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/databases.js";

const TABLES = ["access_token", "app", "department", "enterprise", "environment_config", "environment_data_key", "environment_secret",
  "master_key", "master_key_ring", "member", "member_department", "usage_event", "usage_ingestion_count", "usage_layout", "usage_model", "usage_rollup", "usage_rollup_members", "usage_rollup_pending", "usage_running_total"];

describe.each(dialects)("migrations on an empty database (%s)", (dialect) => {
  const opened: { testDb: TestDatabase; database: Database }[] = [];
  afterEach(async () => {
    for (const { testDb, database } of opened.splice(0)) {
      await database.close();
      await testDb.drop();
    }
  });

  async function emptyDatabase() {
    const testDb = await createTestDatabase(dialect);
    const database = openDatabase(testDb.url);
    opened.push({ testDb, database });
    return database;
  }

  /** An empty database migrated up to `name`, holding one enterprise "e", and the migrator to move it on. */
  async function enterpriseAt(name: string) {
    const database = await emptyDatabase();
    const migrator = new Migrator({ db: database.db, provider: { getMigrations: async () => migrations } });
    expect((await migrator.migrateTo(name)).error).toBeUndefined();
    const db = database.db as unknown as Kysely<any>;
    await db.insertInto("enterprise").values({ enterprise_id: "e", name: "E", currency: "USD", created_at: 0 }).execute();
    return { migrator, db };
  }

  /** The application's tables (Kysely's own and SQLite's internal ones left out). */
  async function tables(database: Database): Promise<string[]> {
    const all = await database.db.introspection.getTables();
    return all.map((t) => t.name).filter((name) => name !== "sqlite_sequence").sort();
  }

  it("applies the baseline (then every later migration), which makes every table and the ingestion count's row; a second run applies nothing", async () => {
    const database = await emptyDatabase();
    expect(await migrateToLatest(database)).toStrictEqual(Object.keys(migrations));
    expect(Object.keys(migrations)[0]).toBe("20261126T080000-baseline");
    expect(await tables(database)).toStrictEqual(TABLES);
    expect(await database.db.selectFrom("usage_ingestion_count").selectAll().execute()).toStrictEqual([{ id: 1, ingestions: 0 }]);
    expect(await database.db.selectFrom("master_key_ring").selectAll().execute()).toStrictEqual([]);
    expect(await migrateToLatest(database)).toStrictEqual([]);
  });

  it("keeps one unique index on a usage event's identity (enterprise_id, event_id)", async () => {
    const database = await emptyDatabase();
    await migrateToLatest(database);
    const { rows } = dialect === "postgres"
      ? await sql<{ name: string }>`select i.relname as name from pg_index x join pg_class i on i.oid = x.indexrelid
          where x.indrelid = 'usage_event'::regclass and x.indisunique
            and array(select a.attname::text from unnest(x.indkey) as k join pg_attribute a on a.attrelid = x.indrelid and a.attnum = k) = array['enterprise_id', 'event_id']`.execute(database.db)
      : await sql<{ name: string }>`select l.name from pragma_index_list('usage_event') l
          where l."unique" and (select group_concat(name, ',') from pragma_index_info(l.name)) = 'enterprise_id,event_id'`.execute(database.db);
    expect(rows).toHaveLength(1);
  });

  it("a baseline that fails half-way leaves nothing of itself: the error names it, and no table was made", async () => {
    const database = await emptyDatabase();
    await sql`create table usage_event (x integer)`.execute(database.db); // in the way of a later table
    await expect(migrateToLatest(database)).rejects.toThrow(/^migration 20261126T080000-baseline failed: /);
    expect(await tables(database)).toStrictEqual(["usage_event"]);
  });

  it("former members: a baseline's members stay current; an e-mail is unique among current members only", async () => {
    const { migrator, db } = await enterpriseAt("20261126T080000-baseline");
    const member = (user_id: string) => ({ enterprise_id: "e", user_id, email: "a@e.example", email_folded: "a@e.example", account_type: 1 });
    await db.insertInto("member").values(member("1")).execute();
    expect((await migrator.migrateTo("20261127T100000-former-members")).error).toBeUndefined();
    expect(await db.selectFrom("member").select(["user_id", "removed_at"]).execute()).toStrictEqual([{ user_id: "1", removed_at: null }]);
    await expect(db.insertInto("member").values(member("2")).execute()).rejects.toThrow(/unique/i);
    await db.updateTable("member").set({ removed_at: 1 }).where("user_id", "=", "1").execute();
    await db.insertInto("member").values(member("2")).execute();
  });

  it("rollup members: the stored rows' members move beside their sums as they are, and back when undone", async () => {
    const { migrator, db } = await enterpriseAt("20261129T090000-directory-version");
    const key = { enterprise_id: "e", grain: 2, period: 86_400 };
    const stored = [
      { ...key, model_id: 0, member_count: 2, sums: "1 2 3 4 5", members: Buffer.from([1, 2, 3]), member_sums: Buffer.from([9, 8]) },
      { ...key, model_id: 7, member_count: 1, sums: "1 1 1 1 1", members: Buffer.from([4]), member_sums: null },
    ];
    await db.insertInto("usage_rollup").values(stored).execute();
    const bytes = (value: Uint8Array | null) => (value === null ? null : Buffer.from(value).toString("hex"));
    expect((await migrator.migrateTo("20261129T100000-rollup-members")).error).toBeUndefined();
    expect(await db.selectFrom("usage_rollup").selectAll().orderBy("model_id").execute())
      .toStrictEqual(stored.map(({ members: _, member_sums: __, ...sums }) => sums));
    expect((await db.selectFrom("usage_rollup_members").selectAll().orderBy("model_id").execute())
      .map((row) => ({ ...row, period: Number(row.period), members: bytes(row.members), member_sums: bytes(row.member_sums) })))
      .toStrictEqual(stored.map(({ enterprise_id, grain, period, model_id, members, member_sums }) =>
        ({ enterprise_id, grain, period, model_id, members: bytes(members), member_sums: bytes(member_sums) })));
    expect((await migrator.migrateTo("20261129T090000-directory-version")).error).toBeUndefined();
    expect((await db.selectFrom("usage_rollup").selectAll().orderBy("model_id").execute())
      .map((row) => ({ ...row, period: Number(row.period), members: bytes(row.members), member_sums: bytes(row.member_sums) })))
      .toStrictEqual(stored.map((row) => ({ ...row, members: bytes(row.members), member_sums: bytes(row.member_sums) })));
  });

  it("final sigma: names folded with ς hold σ in its place, as search now folds them; other names are untouched", async () => {
    const { migrator, db } = await enterpriseAt("20261203T090000-index-placements-by-department");
    const row = (department_id: string, name: string, name_folded: string) =>
      ({ enterprise_id: "e", department_id, parent_department_id: "0", name, name_folded, full_path: name, depth: 0 });
    await db.insertInto("department").values([row("a", "ΟΔΟΣ ΣΟΦΙΑΣ", "οδος σοφιας"), row("b", "Sales", "sales")]).execute();
    expect((await migrator.migrateTo("20261204T090000-fold-final-sigma")).error).toBeUndefined();
    expect(await db.selectFrom("department").select(["department_id", "name_folded"]).orderBy("department_id").execute())
      .toStrictEqual([{ department_id: "a", name_folded: "οδοσ σοφιασ" }, { department_id: "b", name_folded: "sales" }]);
  });

  it("usage layout: an enterprise's layout row moves to usage_layout as it is, and back when undone", async () => {
    const { migrator, db } = await enterpriseAt("20261130T090000-unframe-running-totals");
    const layout = { enterprise_id: "e", version: 4, time_zone: "Asia/Kathmandu", hour_phase: 900 };
    await db.insertInto("usage_rollup_layout").values(layout).execute();
    expect((await migrator.migrateTo("20261201T090000-usage-layout")).error).toBeUndefined();
    expect(await db.selectFrom("usage_layout").selectAll().execute()).toStrictEqual([layout]);
    expect((await migrator.migrateTo("20261130T090000-unframe-running-totals")).error).toBeUndefined();
    expect(await db.selectFrom("usage_rollup_layout").selectAll().execute()).toStrictEqual([layout]);
  });

  it("unframed running totals: each row's frame (its member key and length) is taken off, and put back when undone; a frame not the row's stops it, nothing changed", async () => {
    const { migrator, db } = await enterpriseAt("20261129T100000-rollup-members");
    /** A frame: the member key and the totals' length as LEB128 varints, then the totals. */
    const framed = (memberKey: number, totals: number[]) => Buffer.from([...leb128(memberKey), ...leb128(totals.length), ...totals]);
    const bare = [
      { member_key: 3, day: 20_000, totals: [1, 2, 3, 4, 5, 6] },
      { member_key: 3, day: 20_001, totals: Array.from({ length: 200 }, (_, i) => i % 128) }, // a two-byte length
      { member_key: 2 ** 40, day: 20_000, totals: [7, 0, 0, 0, 0, 1] }, // a six-byte key
    ];
    // More rows than one statement rewrites.
    for (let day = 0; day < 2_100; day++) bare.push({ member_key: 9, day, totals: [1, day % 128, 0, 0, 0, 1] });
    for (let at = 0; at < bare.length; at += 500) {
      await db.insertInto("usage_running_total")
        .values(bare.slice(at, at + 500).map((row) => ({ ...row, totals: framed(row.member_key, row.totals) }))).execute();
    }
    const stored = async () => (await db.selectFrom("usage_running_total").selectAll().orderBy("member_key").orderBy("day").execute())
      .map((row) => ({ member_key: Number(row.member_key), day: row.day, totals: Buffer.from(row.totals).toString("hex") }));
    const expected = (frame: boolean) => [...bare].sort((a, b) => a.member_key - b.member_key || a.day - b.day)
      .map((row) => ({ ...row, totals: (frame ? framed(row.member_key, row.totals) : Buffer.from(row.totals)).toString("hex") }));

    expect((await migrator.migrateTo("20261130T090000-unframe-running-totals")).error).toBeUndefined();
    expect(await stored()).toStrictEqual(expected(false));
    expect((await migrator.migrateTo("20261129T100000-rollup-members")).error).toBeUndefined();
    expect(await stored()).toStrictEqual(expected(true));

    await db.updateTable("usage_running_total").set({ totals: framed(4, [1, 0, 0, 0, 0, 1]) }).where("member_key", "=", 9).where("day", "=", 2_000).execute();
    const { error } = await migrator.migrateTo("20261130T090000-unframe-running-totals");
    expect(String(error)).toMatch(/usage_running_total \(member_key 9, day 2000\): its totals are not framed by its member key and length/);
    const after = await stored();
    expect(after.filter((row) => !(row.member_key === 9 && row.day === 2_000))).toStrictEqual(expected(true).filter((row) => !(row.member_key === 9 && row.day === 2_000)));
  });

  it("undoing the baseline leaves no table of the application", async () => {
    const database = await emptyDatabase();
    await migrateToLatest(database);
    const migrator = new Migrator({ db: database.db, provider: { getMigrations: async () => migrations } });
    expect((await migrator.migrateTo(NO_MIGRATIONS)).error).toBeUndefined();
    expect(await tables(database)).toStrictEqual([]);
  });
});

/** `value` as an unsigned LEB128 varint. */
function leb128(value: number): number[] {
  const bytes: number[] = [];
  for (; value >= 0x80; value = Math.floor(value / 128)) bytes.push((value % 128) | 0x80);
  return [...bytes, value];
}
