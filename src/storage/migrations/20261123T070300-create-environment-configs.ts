// Environment configurations, their sealed secrets (AES-256-GCM ciphertexts, never clear text) and
// the wrapped per-environment data keys.
import { PostgresAdapter, sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  const binary = postgres ? sql`collate "C"` : sql``;
  const blob = postgres ? "bytea" : "blob";

  await db.schema
    .createTable("environment_config")
    .addColumn("id", "text", (c) => c.primaryKey().modifyEnd(binary))
    .addColumn("enterprise_id", "text", (c) => c.notNull().references("enterprise.enterprise_id").onDelete("cascade"))
    .addColumn("name", "text", (c) => c.notNull().modifyEnd(binary))
    .addColumn("description", "text", (c) => c.notNull())
    .addColumn("preinstalled_packages", "text", (c) => c.notNull())
    .addColumn("runtime_config", "text", (c) => c.notNull())
    .addColumn("environment_variables", "text", (c) => c.notNull())
    .addColumn("created_at_ms", "bigint", (c) => c.notNull())
    .addColumn("updated_at_ms", "bigint", (c) => c.notNull())
    .addColumn("revision", "integer", (c) => c.notNull())
    .addColumn("etag", "text", (c) => c.notNull())
    .addUniqueConstraint("environment_config_name", ["enterprise_id", "name"])
    .execute();

  await db.schema
    .createTable("environment_data_key")
    .addColumn("environment_id", "text", (c) => c.primaryKey().references("environment_config.id").onDelete("cascade"))
    .addColumn("master_key_id", "text", (c) => c.notNull())
    .addColumn("wrapped_key", blob, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("environment_secret")
    .addColumn("environment_id", "text", (c) => c.notNull().references("environment_config.id").onDelete("cascade"))
    .addColumn("key", "text", (c) => c.notNull().modifyEnd(binary))
    .addColumn("sealed_value", blob, (c) => c.notNull())
    .addPrimaryKeyConstraint("environment_secret_pk", ["environment_id", "key"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("environment_secret").execute();
  await db.schema.dropTable("environment_data_key").execute();
  await db.schema.dropTable("environment_config").execute();
}
