// The directory's version: every directory import of an enterprise adds one, in its transaction, so
// that a reader can keep what it made of the department tree and placements (the usage report's
// department scopes) until the next import. Frozen text that imports nothing but Kysely.
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("enterprise").addColumn("directory_version", "integer", (c) => c.notNull().defaultTo(0)).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("enterprise").dropColumn("directory_version").execute();
}
