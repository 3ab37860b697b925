// The usage rollups (src/domain/usage-rollup.ts): per enterprise, period and model, the usage summed
// and the members who had any, so that reports over months read a few thousand rows instead of
// millions of events. An enterprise's usage_rollup_layout row says which zone its hour and day
// periods follow; without one its rollups are not complete (a store that had events before this
// migration), and reports read the raw events until `usage rebuild` makes them.
// Frozen text that imports nothing but Kysely.
import { PostgresAdapter, sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  // All or nothing: Kysely runs a PostgreSQL migration in a transaction, a SQLite one outside any.
  if (db.getExecutor().adapter instanceof PostgresAdapter) await createRollups(db, true);
  else await db.transaction().execute((trx) => createRollups(trx, false));
}

async function createRollups(db: Kysely<any>, postgres: boolean): Promise<void> {
  const binary = postgres ? sql`collate "C"` : sql``;
  await db.schema
    .createTable("usage_rollup_layout")
    .addColumn("enterprise_id", "text", (c) => c.primaryKey().modifyEnd(binary)
      .references("enterprise.enterprise_id").onDelete("cascade"))
    .addColumn("version", "integer", (c) => c.notNull())
    .addColumn("time_zone", "text", (c) => c.notNull())
    .addColumn("hour_phase", "integer", (c) => c.notNull())
    .execute();
  // grain: 0 a UTC quarter hour, 1 an hour, 2 a local day (of the layout's zone); period: its first
  // second; model_id 0: all models together. sums: "input output basic pay_go events" in decimal
  // (exact at any size); members: the member keys as a portable roaring bitmap; member_sums, on a
  // day's all-models row only: each member's sums of the day (src/storage/member-day-sums.ts).
  const table = sql`usage_rollup (
      enterprise_id text ${binary} not null, grain integer not null, period bigint not null, model_id integer not null,
      member_count integer not null, sums text not null, members ${sql.raw(postgres ? "bytea" : "blob")} not null,
      member_sums ${sql.raw(postgres ? "bytea" : "blob")},
      primary key (enterprise_id, grain, period, model_id))`;
  await sql`create table ${table} ${sql.raw(postgres ? "" : "without rowid")}`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("usage_rollup").execute();
  await db.schema.dropTable("usage_rollup_layout").execute();
}
