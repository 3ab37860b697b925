// The refold-member-emails migration: e-mails folded by toLowerCase() before it (the Kelvin sign
// became "k") are folded by the ASCII-only rule after it, on SQLite and PostgreSQL alike.
import { Migrator } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { foldEmail } from "../../src/domain/email-match.js";
import { openDatabase, type Database } from "../../src/storage/database.js";
import { migrations } from "../../src/storage/migrations/index.js";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/databases.js";

const EMAILS = ["\u212Aate@acme.example", "Li.Lei@ACME.example", "\u00C9lodie@acme.example", "plain@acme.example"];

describe.each(dialects)("member e-mail refold migration (%s)", (dialect) => {
  let testDb: TestDatabase;
  let database: Database;

  beforeAll(async () => {
    testDb = await createTestDatabase(dialect);
    database = openDatabase(testDb.url);
  });
  afterAll(async () => {
    await database.close();
    await testDb.drop();
  });

  it("folds ASCII letters only, leaving the Kelvin sign and É as they are", async () => {
    const migrator = new Migrator({ db: database.db, provider: { getMigrations: async () => migrations } });
    expect((await migrator.migrateTo("20261124T070000-usage-running-totals-by-day")).error).toBeUndefined();
    await database.db.insertInto("enterprise").values({ enterprise_id: "acme", name: "Acme", currency: "CNY", created_at: 0 }).execute();
    await database.db.insertInto("member").values(EMAILS.map((email, i) => ({
      enterprise_id: "acme", user_id: String(i), email, email_folded: email.toLowerCase(), account_type: 1,
    }))).execute();

    expect((await migrator.migrateTo("20261125T070100-refold-member-emails")).error).toBeUndefined();
    const rows = await database.db.selectFrom("member").select(["email", "email_folded"]).orderBy("user_id").execute();
    expect(rows.map((r) => r.email_folded)).toEqual(EMAILS.map(foldEmail));
    expect(rows.map((r) => r.email_folded)).toEqual(["\u212Aate@acme.example", "li.lei@acme.example", "\u00C9lodie@acme.example", "plain@acme.example"]);
  });
});
