// SQLite: usage_running_total ordered by (day, member_key), found by member through a unique index
// on (member_key, day). An ingestion of current events rewrites each of its members' row of today:
// ordered by member first, those rows lay one to a page across the whole table (about 900 pages
// written back a 1,000-event batch); by day first, they share the pages of today. Measured on
// copies of a 10-million-event store, the ingestion RPC went from 14.2k-14.4k to 18.5k-19.4k
// events/s (stores the import builds measured less, 14.9k-19.3k: docs/operations.md), against a
// second index seek per member and window end for the query. PostgreSQL keeps its table as it is:
// a heap, whose rows stay where they were written whatever the key, found through the same
// (member_key, day) primary key index.
import { PostgresAdapter, sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) return;
  await sql`create table usage_running_total_by_day (member_key bigint not null, day integer not null, totals blob not null,
    primary key (day, member_key)) without rowid`.execute(db);
  await sql`insert into usage_running_total_by_day select member_key, day, totals from usage_running_total order by day, member_key`.execute(db);
  await sql`drop table usage_running_total`.execute(db);
  await sql`alter table usage_running_total_by_day rename to usage_running_total`.execute(db);
  await sql`create unique index usage_running_total_by_member on usage_running_total (member_key, day)`.execute(db);
}

export async function down(): Promise<void> {
  throw new Error("20261124T070000-usage-running-totals-by-day cannot be undone: restore a backup taken before it");
}
