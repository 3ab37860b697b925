// Rollups held pending: an API batch stores its events' share of the rollups as one row of
// usage_rollup_pending (its events as text), in its own transaction, instead of rewriting the rollup
// rows it touches; a larger ingestion, or the first report that needs them, adds the pending rows to
// the rollups and deletes them (src/storage/usage-rollups.ts). Frozen text that imports nothing but Kysely.
import { PostgresAdapter, sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  // ingestion: the store's count of ingestions when the row was written (usage_ingestion_count), one
  // row per ingestion and enterprise; events: "member_key,model_id,ts,input,output,basic,pay_go" per
  // event, joined by ";", the values decimal (exact at any size).
  await sql`create table usage_rollup_pending (
      enterprise_id text ${postgres ? sql`collate "C"` : sql``} not null references enterprise (enterprise_id) on delete cascade,
      ingestion bigint not null, event_count integer not null, events text not null,
      primary key (enterprise_id, ingestion)) ${sql.raw(postgres ? "" : "without rowid")}`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("usage_rollup_pending").execute();
}
