// SQLite page size: a new store is made with 16 KiB pages (fewer, larger writes to the log and the
// checkpoint); a store made before keeps its 4 KiB pages and its data. Either way a commit
// checkpoints the log at 64 MiB, whatever the page size.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import SqliteDatabase from "better-sqlite3";
import { sql } from "kysely";
import { afterAll, describe, expect, it } from "vitest";
import { NEW_STORE_PAGE_BYTES, migrateToLatest, openDatabase } from "../../src/storage/database.js";

const LOG_CHECKPOINT_BYTES = 64 * 2 ** 20;

async function pragma(database: ReturnType<typeof openDatabase>, name: "page_size" | "wal_autocheckpoint"): Promise<number> {
  const { rows } = await sql<Record<string, number>>`${sql.raw(`pragma ${name}`)}`.execute(database.db);
  return Object.values(rows[0]!)[0]!;
}

describe("SQLite page size", () => {
  const dir = mkdtempSync(join(tmpdir(), "database-pages-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("makes a new store with 16 KiB pages and checkpoints its log at 64 MiB", async () => {
    const database = openDatabase(join(dir, "new.sqlite"));
    await migrateToLatest(database);
    expect(NEW_STORE_PAGE_BYTES).toBe(16384);
    expect(await pragma(database, "page_size")).toBe(16384);
    expect(await pragma(database, "wal_autocheckpoint")).toBe(LOG_CHECKPOINT_BYTES / 16384);
    await database.close();
  });

  it("keeps the 4 KiB pages and the rows of a store made before, and checkpoints its log at 64 MiB too", async () => {
    const path = join(dir, "old.sqlite");
    const old = new SqliteDatabase(path);
    old.pragma("page_size = 4096");
    old.pragma("journal_mode = WAL");
    old.exec("create table kept (id integer primary key, note text not null); insert into kept (note) values ('before')");
    old.close();

    const database = openDatabase(path);
    await migrateToLatest(database);
    expect(await pragma(database, "page_size")).toBe(4096);
    expect(await pragma(database, "wal_autocheckpoint")).toBe(LOG_CHECKPOINT_BYTES / 4096);
    const { rows } = await sql<{ note: string }>`select note from kept`.execute(database.db);
    expect(rows).toStrictEqual([{ note: "before" }]);
    await database.close();
  });
});
