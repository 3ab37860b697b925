// member.email_folded was email.toLowerCase(), which folds the Kelvin sign to "k" and the like. It
// becomes the e-mail with ASCII letters lower-cased only. The new fold is narrower, so folds that
// differed still differ and the unique index holds. Both databases' lower() folds ASCII only here:
// SQLite's built-in lower(), and PostgreSQL's under the "C" collation.
import { PostgresAdapter, sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  const asciiLower = db.getExecutor().adapter instanceof PostgresAdapter ? sql`lower(email collate "C")` : sql`lower(email)`;
  await db.updateTable("member").set({ email_folded: asciiLower }).where("email_folded", "<>", asciiLower).execute();
}

export async function down(): Promise<void> {
  throw new Error("20261125T070100-refold-member-emails cannot be undone: restore a backup taken before it");
}
