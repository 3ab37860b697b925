// Enterprise apps and their access tokens; both secrets are stored only as SHA-256 hashes.
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("app")
    .addColumn("app_id", "text", (c) => c.primaryKey())
    .addColumn("enterprise_id", "text", (c) => c.notNull().references("enterprise.enterprise_id").onDelete("cascade"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("secret_hash", "text", (c) => c.notNull())
    .addColumn("permissions", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("revoked_at", "bigint")
    .execute();
  await db.schema.createIndex("app_by_enterprise").on("app").columns(["enterprise_id", "app_id"]).execute();

  await db.schema
    .createTable("access_token")
    .addColumn("token_hash", "text", (c) => c.primaryKey())
    .addColumn("app_id", "text", (c) => c.references("app.app_id").onDelete("cascade"))
    .addColumn("enterprise_id", "text", (c) => c.notNull().references("enterprise.enterprise_id").onDelete("cascade"))
    .addColumn("permissions", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addColumn("revoked_at", "bigint")
    .execute();
  await db.schema.createIndex("access_token_by_app").on("access_token").column("app_id").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("access_token").execute();
  await db.schema.dropTable("app").execute();
}
