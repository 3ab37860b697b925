// Former members: a member removed from the directory (`import directory --prune`) keeps its row, and
// so its usage history, with the time it was removed. Its e-mail is free for another member: the
// e-mail's uniqueness covers current members only. Frozen text that imports nothing but Kysely.
import { PostgresAdapter, sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  // All or nothing: Kysely runs a PostgreSQL migration in a transaction, a SQLite one outside any.
  if (db.getExecutor().adapter instanceof PostgresAdapter) await addRemovedAt(db);
  else await db.transaction().execute((trx) => addRemovedAt(trx));
}

async function addRemovedAt(db: Kysely<any>): Promise<void> {
  // Unix seconds; null for a current member.
  await db.schema.alterTable("member").addColumn("removed_at", "bigint").execute();
  await db.schema.dropIndex("member_by_email").execute();
  await db.schema.createIndex("member_by_email")
    .on("member").columns(["enterprise_id", "email_folded"]).unique().where(sql.ref("removed_at"), "is", null).execute();
}

// Fails while a former member's e-mail belongs to another member: going back would lose one of them.
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex("member_by_email").execute();
  await db.schema.createIndex("member_by_email").on("member").columns(["enterprise_id", "email_folded"]).unique().execute();
  await db.schema.alterTable("member").dropColumn("removed_at").execute();
}
