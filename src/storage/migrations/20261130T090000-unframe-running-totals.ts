// Running totals without a frame: a usage_running_total row's `totals` were its packed totals framed
// by the row's member key and their length (two LEB128 varints before them), so that rows read end
// to end in one value could be told apart. A statement now reads each row's key and length as text
// beside them, and the row holds its packed totals alone. Each row is rewritten as it is, less (or,
// undone, plus) the frame; a frame that does not match its row stops the migration, nothing changed.
// Frozen text that imports nothing but Kysely.
import { PostgresAdapter, sql, type Kysely } from "kysely";

/** Rows read and rewritten per statement. */
const ROWS_AT_ONCE = 2_000;

interface StoredRow {
  member_key: number | string;
  day: number;
  totals: Uint8Array;
}

export async function up(db: Kysely<any>): Promise<void> {
  await rewriteAll(db, (row) => {
    const [memberKey, lengthAt] = readVarint(row.totals, 0);
    const [length, totalsAt] = readVarint(row.totals, lengthAt);
    if (memberKey !== Number(row.member_key) || totalsAt + length !== row.totals.length) {
      throw new Error(`usage_running_total (member_key ${row.member_key}, day ${row.day}): its totals are not framed by its member key and length`);
    }
    return row.totals.subarray(totalsAt);
  });
}

export async function down(db: Kysely<any>): Promise<void> {
  await rewriteAll(db, (row) => {
    const header = [...varint(Number(row.member_key)), ...varint(row.totals.length)];
    return Uint8Array.from([...header, ...row.totals]);
  });
}

/** Every row's totals replaced by `rewrite`'s, all or nothing (Kysely runs a PostgreSQL migration in a transaction, a SQLite one outside any). */
async function rewriteAll(db: Kysely<any>, rewrite: (row: StoredRow) => Uint8Array): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  // In the table's own key order (SQLite keeps the rows in it): pages of it, one after another.
  const [first, second] = postgres ? (["member_key", "day"] as const) : (["day", "member_key"] as const);
  const run = async (trx: Kysely<any>) => {
    let after: StoredRow | undefined;
    for (;;) {
      const rows: StoredRow[] = await trx.selectFrom("usage_running_total").select(["member_key", "day", "totals"])
        .$if(after !== undefined, (qb) => qb.where(sql<boolean>`(${sql.ref(first)}, ${sql.ref(second)}) > (${after![first]}, ${after![second]})`))
        .orderBy(first).orderBy(second).limit(ROWS_AT_ONCE).execute();
      if (rows.length === 0) return;
      const values = rows.map((row) => {
        const totals = rewrite(row);
        return sql`(cast(${row.member_key} as bigint), cast(${row.day} as integer), ${postgres ? sql`cast(${totals} as bytea)` : sql`${totals}`})`;
      });
      await sql`with v(k, d, totals) as (values ${sql.join(values)})
        update usage_running_total set totals = v.totals from v
        where usage_running_total.member_key = v.k and usage_running_total.day = v.d`.execute(trx);
      after = rows[rows.length - 1];
    }
  };
  if (postgres) await run(db);
  else await db.transaction().execute(run);
}

/** The unsigned LEB128 varint at `at` (below 2^53) and the offset after it. */
function readVarint(bytes: Uint8Array, at: number): [value: number, next: number] {
  let value = 0;
  let scale = 1;
  for (;;) {
    if (at >= bytes.length) throw new Error("usage_running_total: a frame's varint runs past its totals");
    const byte = bytes[at++]!;
    value += (byte & 0x7f) * scale;
    scale *= 128;
    if (byte < 0x80) return [value, at];
  }
}

/** `value` (below 2^53) as an unsigned LEB128 varint. */
function varint(value: number): number[] {
  const bytes: number[] = [];
  while (value >= 0x80) {
    bytes.push((value % 128) | 0x80);
    value = Math.floor(value / 128);
  }
  bytes.push(value);
  return bytes;
}
