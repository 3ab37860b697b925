// One row counting the usage ingestions committed: an import that commits in chunks reads it to know
// whether another ingestion changed the running totals between its chunks.
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("usage_ingestion_count")
    .addColumn("id", "integer", (c) => c.primaryKey())
    .addColumn("ingestions", "bigint", (c) => c.notNull())
    .execute();
  await db.insertInto("usage_ingestion_count").values({ id: 1, ingestions: 0 }).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("usage_ingestion_count").execute();
}
