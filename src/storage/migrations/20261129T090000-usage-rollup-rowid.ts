// SQLite: usage_rollup becomes an ordinary (rowid) table with a unique index on its key, instead of a
// WITHOUT ROWID table. A day's all-models row holds every member's day sums (tens of kilobytes): in a
// WITHOUT ROWID table the rows themselves are the b-tree's keys, so its inner pages held a few cells
// each, and finding one of 180 days' rows cost about 20 µs. In the index only the key columns are.
// PostgreSQL's table is a heap with a primary key index already: nothing changes there.
// Frozen text that imports nothing but Kysely.
import { PostgresAdapter, sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) return;
  // All or nothing: Kysely runs a SQLite migration outside any transaction.
  await db.transaction().execute(async (trx) => {
    await sql`create table usage_rollup_rows (
        enterprise_id text not null, grain integer not null, period bigint not null, model_id integer not null,
        member_count integer not null, sums text not null, members blob not null, member_sums blob)`.execute(trx);
    await sql`insert into usage_rollup_rows (enterprise_id, grain, period, model_id, member_count, sums, members, member_sums)
        select enterprise_id, grain, period, model_id, member_count, sums, members, member_sums from usage_rollup
        order by enterprise_id, grain, period, model_id`.execute(trx);
    await sql`drop table usage_rollup`.execute(trx);
    await sql`alter table usage_rollup_rows rename to usage_rollup`.execute(trx);
    await sql`create unique index usage_rollup_key on usage_rollup (enterprise_id, grain, period, model_id)`.execute(trx);
  });
}

export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) return;
  await db.transaction().execute(async (trx) => {
    await sql`create table usage_rollup_keyed (
        enterprise_id text not null, grain integer not null, period bigint not null, model_id integer not null,
        member_count integer not null, sums text not null, members blob not null, member_sums blob,
        primary key (enterprise_id, grain, period, model_id)) without rowid`.execute(trx);
    await sql`insert into usage_rollup_keyed select enterprise_id, grain, period, model_id, member_count, sums, members, member_sums
        from usage_rollup`.execute(trx);
    await sql`drop table usage_rollup`.execute(trx);
    await sql`alter table usage_rollup_keyed rename to usage_rollup`.execute(trx);
  });
}
