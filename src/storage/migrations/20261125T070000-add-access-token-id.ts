// Access tokens get an id an operator can list and revoke them by: random, unique, never derived from
// the token. Indexes for listing an enterprise's tokens and for purging ended ones.
import { PostgresAdapter, sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`alter table access_token add column token_id text`.execute(db);
    await sql`update access_token set token_id = 'tok_' || replace(gen_random_uuid()::text, '-', '')`.execute(db);
    await sql`alter table access_token alter column token_id set not null`.execute(db);
  } else {
    // SQLite cannot add a NOT NULL column without a default: rebuild the table, all or nothing (Kysely
    // runs SQLite migrations outside a transaction).
    await db.transaction().execute(async (trx) => {
      await trx.schema
        .createTable("access_token_with_id")
        .addColumn("token_hash", "text", (c) => c.primaryKey())
        .addColumn("token_id", "text", (c) => c.notNull())
        .addColumn("app_id", "text", (c) => c.references("app.app_id").onDelete("cascade"))
        .addColumn("enterprise_id", "text", (c) => c.notNull().references("enterprise.enterprise_id").onDelete("cascade"))
        .addColumn("permissions", "text", (c) => c.notNull())
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .addColumn("expires_at", "bigint", (c) => c.notNull())
        .addColumn("revoked_at", "bigint")
        .execute();
      await sql`insert into access_token_with_id
        select token_hash, 'tok_' || lower(hex(randomblob(16))), app_id, enterprise_id, permissions, created_at, expires_at, revoked_at
        from access_token`.execute(trx);
      await trx.schema.dropTable("access_token").execute();
      await trx.schema.alterTable("access_token_with_id").renameTo("access_token").execute();
      await trx.schema.createIndex("access_token_by_app").on("access_token").column("app_id").execute();
    });
  }
  await db.schema.createIndex("access_token_id").on("access_token").column("token_id").unique().execute();
  await db.schema.createIndex("access_token_by_enterprise").on("access_token").columns(["enterprise_id", "created_at"]).execute();
  await db.schema.createIndex("access_token_by_expiry").on("access_token").column("expires_at").execute();
  await db.schema.createIndex("access_token_by_revocation").on("access_token").column("revoked_at").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex("access_token_by_revocation").execute();
  await db.schema.dropIndex("access_token_by_expiry").execute();
  await db.schema.dropIndex("access_token_by_enterprise").execute();
  await db.schema.dropIndex("access_token_id").execute();
  await db.schema.alterTable("access_token").dropColumn("token_id").execute();
}
