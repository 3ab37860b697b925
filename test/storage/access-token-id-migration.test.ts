// Migration 20261125T070000-add-access-token-id: tokens issued before it get a distinct random token_id
// and keep working.
import { Migrator, sql } from "kysely";
import { describe, expect, it } from "vitest";
import { nowSeconds } from "../../src/domain/credentials.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { openDatabase } from "../../src/storage/database.js";
import { migrations } from "../../src/storage/migrations/index.js";
import { createTestDatabase, dialects } from "../helpers/databases.js";
import { acme } from "../helpers/fixtures.js";

const TOKEN_ID = /^tok_[0-9a-f]{32}$/;
const DAY = 86_400;

describe.each(dialects)("migration 20261125T070000-add-access-token-id (%s)", (dialect) => {
  it("gives every existing token a distinct random token_id and keeps it working", async () => {
    const testDb = await createTestDatabase(dialect);
    const database = openDatabase(testDb.url);
    try {
      const migrator = new Migrator({ db: database.db, provider: { getMigrations: async () => migrations } });
      const { error } = await migrator.migrateTo("20261124T070000-usage-running-totals-by-day");
      if (error) throw error;
      await importDirectory(database, acme);
      for (const hash of ["h1", "h2", "h3"]) {
        await sql`insert into access_token (token_hash, app_id, enterprise_id, permissions, created_at, expires_at, revoked_at)
          values (${hash}, null, 'acme', 'departments:read', 1, ${nowSeconds() + DAY}, null)`.execute(database.db);
      }
      const after = await migrator.migrateToLatest();
      if (after.error) throw after.error;
      const rows = await database.db.selectFrom("access_token").select(["token_hash", "token_id"]).orderBy("token_hash").execute();
      expect(rows.map((r) => r.token_hash)).toStrictEqual(["h1", "h2", "h3"]);
      expect(rows.every((r) => TOKEN_ID.test(r.token_id))).toBe(true);
      expect(new Set(rows.map((r) => r.token_id)).size).toBe(3);
      await expect(database.db.insertInto("access_token").values({
        token_hash: "h4", token_id: rows[0]!.token_id, app_id: null, enterprise_id: "acme", permissions: "departments:read", created_at: 1, expires_at: 2, revoked_at: null,
      }).execute()).rejects.toThrow();
    } finally {
      await database.close();
      await testDb.drop();
    }
  });
});
