// The enterprise's time zone (IANA name): the default zone of the usage report, trend and export.
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("enterprise").addColumn("time_zone", "text", (c) => c.notNull().defaultTo("UTC")).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("enterprise").dropColumn("time_zone").execute();
}
