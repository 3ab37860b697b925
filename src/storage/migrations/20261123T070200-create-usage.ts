// Usage: a model dictionary, the raw events (idempotency by event_id, audit, the ends of a window)
// and the rollup of 112-, 28- and 7-day periods the query reads whole days from. Money is integer
// micro-units.
import { PostgresAdapter, sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  const binary = postgres ? sql`collate "C"` : sql``;

  await db.schema
    .createTable("usage_model")
    .addColumn("model_id", "integer", (c) => (postgres ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey()))
    .addColumn("model_name", "text", (c) => c.notNull().modifyEnd(binary))
    .addColumn("model_type", "text", (c) => c.notNull().modifyEnd(binary))
    .addColumn("model_source", "text", (c) => c.notNull().modifyEnd(binary))
    .addUniqueConstraint("usage_model_identity", ["model_name", "model_type", "model_source"])
    .execute();

  await db.schema
    .createTable("usage_event")
    .addColumn("enterprise_id", "text", (c) => c.notNull())
    .addColumn("event_id", "text", (c) => c.notNull())
    .addColumn("member_key", "bigint", (c) => c.notNull())
    .addColumn("model_id", "integer", (c) => c.notNull())
    .addColumn("ts", "bigint", (c) => c.notNull())
    .addColumn("input_tokens", "bigint", (c) => c.notNull())
    .addColumn("output_tokens", "bigint", (c) => c.notNull())
    .addColumn("basic_micros", "bigint", (c) => c.notNull())
    .addColumn("pay_go_micros", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("usage_event_pk", ["enterprise_id", "event_id"])
    .execute();
  // Covering, member first: the partial first and last day of a window are index-only range reads.
  if (postgres) {
    await sql`create index usage_event_by_member on usage_event (member_key, ts)
      include (model_id, input_tokens, output_tokens, basic_micros, pay_go_micros)`.execute(db);
  } else {
    await db.schema.createIndex("usage_event_by_member").on("usage_event")
      .columns(["member_key", "ts", "model_id", "input_tokens", "output_tokens", "basic_micros", "pay_go_micros"]).execute();
  }

  // Sums per member, rollup tier (a period length in days: 112, 28 or 7), period and model.
  await db.schema
    .createTable("usage_rollup")
    .addColumn("member_key", "bigint", (c) => c.notNull())
    .addColumn("tier_days", "integer", (c) => c.notNull())
    .addColumn("period", "integer", (c) => c.notNull())
    .addColumn("model_id", "integer", (c) => c.notNull())
    .addColumn("input_tokens", "bigint", (c) => c.notNull())
    .addColumn("output_tokens", "bigint", (c) => c.notNull())
    .addColumn("basic_micros", "bigint", (c) => c.notNull())
    .addColumn("pay_go_micros", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("usage_rollup_pk", ["member_key", "tier_days", "period", "model_id"])
    // SQLite turns an integer sum past 2^63 into a float; refuse instead (PostgreSQL raises by itself).
    .$call((t) => (postgres ? t : t.addCheckConstraint("usage_rollup_integers", sql`typeof(input_tokens) = 'integer'
      and typeof(output_tokens) = 'integer' and typeof(basic_micros) = 'integer' and typeof(pay_go_micros) = 'integer'`)))
    // SQLite: the table is its primary-key B-tree, so a member's periods are read in one range.
    .$call((t) => (postgres ? t : t.modifyEnd(sql`without rowid`)))
    .execute();
  if (postgres) {
    await sql`create index usage_rollup_covering on usage_rollup (member_key, tier_days, period)
      include (model_id, input_tokens, output_tokens, basic_micros, pay_go_micros)`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("usage_rollup").execute();
  await db.schema.dropTable("usage_event").execute();
  await db.schema.dropTable("usage_model").execute();
}
