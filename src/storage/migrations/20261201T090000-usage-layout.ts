// One layout for all of an enterprise's usage pre-aggregates: usage_rollup_layout becomes usage_layout,
// whose version now covers the running totals as well as the rollups (an enterprise whose layout is
// not the code's is read from its raw events until `usage rebuild`). The rows are kept as they are:
// version 4 already wrote both in today's formats. Frozen text that imports nothing but Kysely.
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("usage_rollup_layout").renameTo("usage_layout").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("usage_layout").renameTo("usage_rollup_layout").execute();
}
