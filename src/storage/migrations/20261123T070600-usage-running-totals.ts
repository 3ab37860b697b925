// Usage running totals instead of rollup cells: one usage_running_total row per member and per UTC
// day with events, holding the member's totals per model over every event up to the end of that day,
// ordered by (member_key, day). A window's whole days are then two rows a member (the cells needed
// about 10.5 for 180 days), and an ingestion of current events rewrites one row a member instead of
// three cells. The table is made empty and usage_cell is dropped; the running totals are derived
// data, made from the raw events after the migrations (storage/database.ts, migrateToLatest).
import { PostgresAdapter, sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  await db.schema
    .createTable("usage_running_total")
    .addColumn("member_key", "bigint", (c) => c.notNull())
    .addColumn("day", "integer", (c) => c.notNull())
    .addColumn("totals", postgres ? "bytea" : "blob", (c) => c.notNull())
    .addPrimaryKeyConstraint("usage_running_total_pk", ["member_key", "day"])
    .$call((t) => (postgres ? t : t.modifyEnd(sql`without rowid`)))
    .execute();
  await db.schema.dropTable("usage_cell").execute();
}

export async function down(): Promise<void> {
  throw new Error("20261123T070600-usage-running-totals cannot be undone: restore a backup taken before it");
}
