// The refold-member-emails migration: e-mails folded by toLowerCase() before it (the Kelvin sign
// became "k") are folded by the rule of domain/email-match.ts after it, in batches, on SQLite and
// PostgreSQL alike; two members the new rule would match alike stop it, named.
import { Migrator, type Kysely } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { foldEmail } from "../../src/domain/email-match.js";
import { openDatabase, type Database } from "../../src/storage/database.js";
import { migrations } from "../../src/storage/migrations/index.js";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/databases.js";

const EMAILS = ["\u212Aate@acme.example", "Li.Lei@ACME.example", "\u00C9LODIE@acme.example", "\u212Bngstr\u00F6m@acme.example", "\u0130pek@acme.example"];
/** More rows than one batch of the migration. */
const FILLER = Array.from({ length: 1_200 }, (_, i) => `User.${i}@ACME.example`);

describe.each(dialects)("member e-mail refold migration (%s)", (dialect) => {
  const opened: { testDb: TestDatabase; database: Database }[] = [];
  afterEach(async () => {
    for (const { testDb, database } of opened.splice(0)) {
      await database.close();
      await testDb.drop();
    }
  });

  /** A database migrated up to just before the refold, holding acme's members folded the old way. */
  async function beforeRefold(emails: string[]) {
    const testDb = await createTestDatabase(dialect);
    const database = openDatabase(testDb.url);
    opened.push({ testDb, database });
    const migrator = new Migrator({ db: database.db, provider: { getMigrations: async () => migrations } });
    expect((await migrator.migrateTo("20261125T070000-add-access-token-id")).error).toBeUndefined();
    // The enterprise table as it was at that migration (before time_zone).
    await (database.db as Kysely<any>).insertInto("enterprise").values({ enterprise_id: "acme", name: "Acme", currency: "CNY", created_at: 0 }).execute();
    for (let i = 0; i < emails.length; i += 500) {
      await database.db.insertInto("member").values(emails.slice(i, i + 500).map((email, j) => ({
        enterprise_id: "acme", user_id: String(i + j).padStart(5, "0"), email, email_folded: email.toLowerCase(), account_type: 1,
      }))).execute();
    }
    return { database, migrator };
  }

  it("folds by one-to-one case pairs: É to é; the Kelvin and Angstrom signs and İ stay themselves", async () => {
    const { database, migrator } = await beforeRefold([...EMAILS, ...FILLER]);
    expect((await migrator.migrateTo("20261125T070100-refold-member-emails")).error).toBeUndefined();
    const rows = await database.db.selectFrom("member").select(["email", "email_folded"]).orderBy("user_id").execute();
    expect(rows.map((r) => r.email_folded)).toEqual([...EMAILS, ...FILLER].map(foldEmail));
    expect(rows.slice(0, EMAILS.length).map((r) => r.email_folded)).toEqual([
      "\u212Aate@acme.example", "li.lei@acme.example", "\u00E9lodie@acme.example", "\u212Bngstr\u00F6m@acme.example", "\u0130pek@acme.example",
    ]);
    expect(rows.at(-1)!.email_folded).toBe("user.1199@acme.example");
  });

  it("stops, naming both members, when two e-mails would match alike", async () => {
    // toLowerCase() writes a final sigma for the first, so the old folds differ; the new ones do not.
    const { database, migrator } = await beforeRefold(["\u0391\u03A3@acme.example", "\u0391\u03C3@acme.example"]);
    const { error } = await migrator.migrateTo("20261125T070100-refold-member-emails");
    expect(String(error)).toContain('members "\u0391\u03A3@acme.example" and "\u0391\u03C3@acme.example" of enterprise "acme" would match alike');
    expect((await database.db.selectFrom("member").select("email_folded").orderBy("user_id").execute()).map((r) => r.email_folded))
      .toEqual(["\u03B1\u03C2@acme.example", "\u03B1\u03C3@acme.example"]);
  });
});
