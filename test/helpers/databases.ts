// Test databases, one per dialect: SQLite always, PostgreSQL when DATABASE_URL names a server (CI
// starts one). Each call makes a fresh, empty database so test files never share state.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { isPostgresUrl } from "../../src/storage/database.js";

export type DialectName = "sqlite" | "postgres";

const postgresUrl = process.env.DATABASE_URL && isPostgresUrl(process.env.DATABASE_URL) ? process.env.DATABASE_URL : undefined;

/** The dialects to run storage and end-to-end tests against, for `describe.each`. */
export const dialects: DialectName[] = postgresUrl ? ["sqlite", "postgres"] : ["sqlite"];

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(dialect: DialectName): Promise<TestDatabase> {
  if (dialect === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "eadmin-test-"));
    return { url: join(dir, "test.sqlite"), drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  if (!postgresUrl) throw new Error("DATABASE_URL is not a postgres:// URL");
  const name = `eadmin_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  await admin.query(`create database ${name}`); // name is generated above: [a-z0-9_] only
  await admin.end();
  const url = new URL(postgresUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: postgresUrl });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}
