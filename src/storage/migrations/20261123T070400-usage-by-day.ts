// Usage storage ordered for writing as well as reading: raw events by (day, member_key, ts) instead of
// a member-first index (a batch of events for random members wrote one random page per event; now
// they land in the current day's pages), and the per-model rollup rows replaced by one usage_cell per
// (tier, period, member) holding every model's totals, in tiers of 49, 7 and 1 days. The cells are
// left empty: migration 20261123T070600 drops them, and the running totals that replaced them are
// made from the raw events after the migrations (storage/database.ts, migrateToLatest).
import { PostgresAdapter, sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;

  if (postgres) {
    await sql`alter table usage_event add column day integer`.execute(db);
    await sql`update usage_event set day = (ts / 86400)::integer`.execute(db);
    await sql`alter table usage_event alter column day set not null`.execute(db);
    await sql`drop index usage_event_by_member`.execute(db);
    await sql`create index usage_event_by_day on usage_event (day, member_key, ts)
      include (model_id, input_tokens, output_tokens, basic_micros, pay_go_micros)`.execute(db);
  } else {
    // SQLite: the table is its (day, member_key, ts, event_id) B-tree; the primary key of the old
    // table becomes a unique index (idempotency by event_id).
    await sql`create table usage_event_by_day (
      day integer not null, member_key integer not null, ts integer not null, event_id text not null,
      enterprise_id text not null, model_id integer not null,
      input_tokens integer not null, output_tokens integer not null, basic_micros integer not null, pay_go_micros integer not null,
      primary key (day, member_key, ts, event_id)) without rowid`.execute(db);
    await sql`insert into usage_event_by_day
      select ts / 86400, member_key, ts, event_id, enterprise_id, model_id, input_tokens, output_tokens, basic_micros, pay_go_micros
      from usage_event order by 1, 2, 3, 4`.execute(db);
    await sql`drop table usage_event`.execute(db);
    await sql`alter table usage_event_by_day rename to usage_event`.execute(db);
  }
  await sql`create unique index usage_event_identity on usage_event (enterprise_id, event_id)`.execute(db);

  await db.schema.dropTable("usage_rollup").execute();
  await db.schema
    .createTable("usage_cell")
    .addColumn("tier_days", "integer", (c) => c.notNull())
    .addColumn("period", "integer", (c) => c.notNull())
    .addColumn("member_key", "bigint", (c) => c.notNull())
    .addColumn("totals", postgres ? "bytea" : "blob", (c) => c.notNull())
    .addPrimaryKeyConstraint("usage_cell_pk", ["tier_days", "period", "member_key"])
    .$call((t) => (postgres ? t : t.modifyEnd(sql`without rowid`)))
    .execute();
}

export async function down(): Promise<void> {
  throw new Error("20261123T070400-usage-by-day cannot be undone: restore a backup taken before it");
}
