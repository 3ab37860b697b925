// The master key ring's state: one row naming the key that wraps new data keys. It lives in the
// database so that every server and the rotation agree on it inside the transaction that stores a
// wrapped key. Left empty here: the first write fills it from the key source (the key file's
// "current", or the first key of ENTERPRISE_ADMIN_MASTER_KEY), which is what wrapped keys before it.
// Beside it, the master keys this database's rotations added to the key source: a key file may serve
// several databases, and a rotation removes from it only keys recorded here, never one it did not add.
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("master_key_ring")
    .addColumn("id", "integer", (c) => c.primaryKey())
    .addColumn("current_master_key_id", "text", (c) => c.notNull())
    .addCheckConstraint("master_key_ring_single_row", sql`id = 1`)
    .execute();

  await db.schema
    .createTable("master_key")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("added_at_ms", "bigint", (c) => c.notNull())
    .addColumn("retired_at_ms", "bigint")
    .addColumn("removed_at_ms", "bigint")
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("master_key").execute();
  await db.schema.dropTable("master_key_ring").execute();
}
