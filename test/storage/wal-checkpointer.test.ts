// The server's background WAL checkpoints (openDatabase's backgroundCheckpoints, SQLite files only):
// what is committed reaches the database file without the writer checkpointing, and closing leaves
// no log behind; a log grown large is cut back.
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import SqliteDatabase from "better-sqlite3";
import { sql } from "kysely";
import { afterAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/storage/database.js";

describe("background WAL checkpoints (SQLite)", () => {
  const dir = mkdtempSync(join(tmpdir(), "wal-checkpointer-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("copies committed pages into the database file while the connection stays open, and leaves no log on close", async () => {
    const path = join(dir, "store.sqlite");
    const database = openDatabase(path, { backgroundCheckpoints: true });
    await sql`create table filler (id integer primary key, payload blob not null)`.execute(database.db);
    const sizeBefore = statSync(path).size;
    // ~2 MiB in small commits: far below the connection's own checkpoint threshold (64 MiB of log).
    for (let i = 0; i < 64; i++) {
      await database.db.transaction().execute(async (trx) => {
        for (let j = 0; j < 8; j++) await sql`insert into filler (payload) values (randomblob(4096))`.execute(trx);
      });
    }
    // The database file grows by what was committed once the worker has had its turn.
    let copied = false;
    for (let attempt = 0; attempt < 50 && !copied; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      copied = statSync(path).size > sizeBefore + 2 * 1024 * 1024;
    }
    expect(copied).toBe(true);

    await database.close();
    expect(existsSync(`${path}-wal`)).toBe(false);
    const reopened = new SqliteDatabase(path, { readonly: true });
    expect(reopened.prepare("select count(*) as n from filler").get()).toStrictEqual({ n: 512 });
    reopened.close();
  });

  it("cuts a log that grew past 64 MiB while a reader held its snapshot back to 64 MiB at the first commit after the reader lets go", async () => {
    const path = join(dir, "held.sqlite");
    const database = openDatabase(path, { backgroundCheckpoints: true });
    await sql`create table filler (id integer primary key, payload blob not null)`.execute(database.db);
    const reader = new SqliteDatabase(path, { readonly: true });
    reader.exec("begin");
    reader.prepare("select count(*) from filler").get(); // its snapshot: no checkpoint may go past it
    for (let i = 0; i < 80; i++) await sql`insert into filler (payload) select randomblob(1048576)`.execute(database.db);
    const grown = statSync(`${path}-wal`).size;
    expect(grown).toBeGreaterThan(80 * MiB);
    reader.exec("commit");
    reader.close();
    // Once the worker's checkpoint has copied the whole log, the next commit starts it again from the top, and cuts it.
    let size = grown;
    for (let attempt = 0; attempt < 50 && size > 64 * MiB; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      await sql`insert into filler (payload) values (x'00')`.execute(database.db);
      size = statSync(`${path}-wal`).size;
    }
    expect(size).toBeLessThanOrEqual(64 * MiB);
    await database.close();
  });
});

const MiB = 2 ** 20;
