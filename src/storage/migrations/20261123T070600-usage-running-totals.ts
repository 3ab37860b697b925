// Usage running totals instead of rollup cells: one usage_running_total row per member and per UTC
// day with events, holding the member's totals per model over every event up to the end of that day,
// ordered by (member_key, day). A window's whole days are then two rows a member (the cells needed
// about 10.5 for 180 days), and an ingestion of current events rewrites one row a member instead of
// three cells. Built from the raw events; usage_cell is dropped.
import { PostgresAdapter, sql, type Kysely } from "kysely";
import { rebuildRunningTotals } from "../usage-running-totals.js";
import type { Schema } from "../schema.js";

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
  await rebuildRunningTotals({ db: db as Kysely<Schema>, dialect: postgres ? "postgres" : "sqlite" });
  await db.schema.dropTable("usage_cell").execute();
}

export async function down(): Promise<void> {
  throw new Error("20261123T070600-usage-running-totals cannot be undone: restore a backup taken before it");
}
