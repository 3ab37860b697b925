// The service's PostgreSQL pool reads BIGINT as numbers through parsers of its own: the driver's
// process-wide parsers stay as they were, so any other client in the process (a tool, a test, a
// library) still reads a BIGINT past 2^53 exactly, as a string.
import { sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "../../src/storage/database.js";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/databases.js";

describe.skipIf(!dialects.includes("postgres"))("BIGINT parsing on PostgreSQL", () => {
  let testDb: TestDatabase;
  let database: Database;

  beforeAll(async () => {
    testDb = await createTestDatabase("postgres");
    database = openDatabase(testDb.url);
  });
  afterAll(async () => {
    await database?.close();
    await testDb?.drop();
  });

  it("the service's pool reads a BIGINT as a number; another client of the process still reads 2^53 + 1 exactly, as text", async () => {
    const { rows } = await sql<{ n: unknown }>`select cast(12345 as bigint) as n`.execute(database.db);
    expect(rows[0]!.n).toBe(12345);
    const other = new pg.Client({ connectionString: testDb.url });
    await other.connect();
    try {
      const { rows: [row] } = await other.query<{ n: unknown }>("select cast(9007199254740993 as bigint) as n");
      expect(row!.n).toBe("9007199254740993");
    } finally {
      await other.end();
    }
  });
});
