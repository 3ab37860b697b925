// The rollups' members apart from their sums: usage_rollup keeps each period's member count and
// sums, a short row; usage_rollup_members, under the same key, the members' bitmap and a day's
// member sums, the long part. A report that needs only sums (every period alone in its bucket, a
// day's stamp) then reads short rows, many to a page, instead of rows that each fill pages of their
// own. The stored rows move as they are. Frozen text that imports nothing but Kysely.
import { PostgresAdapter, sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  // All or nothing: Kysely runs a PostgreSQL migration in a transaction, a SQLite one outside any.
  if (db.getExecutor().adapter instanceof PostgresAdapter) await splitMembers(db, true);
  else await db.transaction().execute((trx) => splitMembers(trx, false));
}

async function splitMembers(db: Kysely<any>, postgres: boolean): Promise<void> {
  const binary = postgres ? sql`collate "C"` : sql``;
  const blob = sql.raw(postgres ? "bytea" : "blob");
  // members: the member keys as a portable roaring bitmap; member_sums, on a day's all-models row
  // only: each member's sums of the day (src/storage/member-day-sums.ts).
  await sql`create table usage_rollup_members (
      enterprise_id text ${binary} not null, grain integer not null, period bigint not null, model_id integer not null,
      members ${blob} not null, member_sums ${blob},
      primary key (enterprise_id, grain, period, model_id)) ${sql.raw(postgres ? "" : "without rowid")}`.execute(db);
  await sql`insert into usage_rollup_members (enterprise_id, grain, period, model_id, members, member_sums)
    select enterprise_id, grain, period, model_id, members, member_sums from usage_rollup`.execute(db);
  await db.schema.alterTable("usage_rollup").dropColumn("members").execute();
  await db.schema.alterTable("usage_rollup").dropColumn("member_sums").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  const blob = postgres ? "bytea" : "blob";
  await db.schema.alterTable("usage_rollup").addColumn("members", sql.raw(blob), (c) => c.notNull().defaultTo(sql`''`)).execute();
  await db.schema.alterTable("usage_rollup").addColumn("member_sums", sql.raw(blob)).execute();
  const key = sql`m.enterprise_id = usage_rollup.enterprise_id and m.grain = usage_rollup.grain and m.period = usage_rollup.period
    and m.model_id = usage_rollup.model_id`;
  await sql`update usage_rollup set members = (select m.members from usage_rollup_members m where ${key}),
    member_sums = (select m.member_sums from usage_rollup_members m where ${key})`.execute(db);
  await db.schema.dropTable("usage_rollup_members").execute();
}
