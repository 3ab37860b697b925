// Opening a SQLite store tries a write (a read-only store is refused at once): never by waiting for the
// write lock another process holds, which would hold the thread, and every command's start, for seconds.
import { join } from "node:path";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { migrateToLatest, openDatabase } from "../../src/storage/database.js";
import { holdWriteLock } from "../helpers/write-lock.js";
import { scratchFolder } from "../helpers/scratch-folder.js";

describe("opening a SQLite store", () => {
  const dir = scratchFolder("database-open-");

  it("while another process holds the write lock takes no wait, and keeps the store's busy timeout for what follows", async () => {
    const path = join(dir, "held.sqlite");
    const first = openDatabase(path);
    await migrateToLatest(first);
    await first.close();
    const release = await holdWriteLock("sqlite", path);
    try {
      const started = performance.now();
      const database = openDatabase(path, { env: { STORE_BUSY_TIMEOUT_MS: "1234" } });
      const took = performance.now() - started;
      const { rows } = await sql<{ timeout: number }>`pragma busy_timeout`.execute(database.db);
      await database.close();
      expect(took).toBeLessThan(1_000); // it waited better-sqlite3's default 5 s
      expect(Object.values(rows[0]!)).toStrictEqual([1234]);
    } finally {
      await release();
    }
  });
});
