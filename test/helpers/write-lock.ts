// Another connection that holds the store's write lock, as a second writer would: SQLite's (BEGIN
// IMMEDIATE) or PostgreSQL's ingestion lock (the advisory lock UsageRepository takes).
import SqliteDatabase from "better-sqlite3";
import pg from "pg";
import type { DialectName } from "./databases.js";

/** Holds the write lock of the store at `databaseUrl` until the returned function releases it. */
export async function holdWriteLock(dialect: DialectName, databaseUrl: string): Promise<() => Promise<void>> {
  if (dialect === "sqlite") {
    const other = new SqliteDatabase(databaseUrl);
    other.exec("begin immediate");
    return async () => {
      other.exec("rollback");
      other.close();
    };
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query("select pg_advisory_lock(72001)");
  return async () => {
    await client.query("select pg_advisory_unlock(72001)");
    await client.end();
  };
}
