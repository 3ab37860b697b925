// Statements of many rows, each SQL text made once per row count: building a 512-row one costs more than running it.
import { sql, type Kysely } from "kysely";
import type { Dialect } from "./database.js";
import type { Schema } from "./schema.js";

/** Rows per statement at most: under SQLite's 32,766 parameters with ten a row. */
const CHUNK_ROWS = 512;

/** Statement sizes: 512-row chunks, then falling powers of two, so a statement has at most ten texts. */
export function chunks<T>(rows: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0, size = CHUNK_ROWS; i < rows.length; i += size) {
    while (size > rows.length - i) size >>= 1;
    out.push(rows.slice(i, i + size));
  }
  return out;
}

/**
 * `column` among `values`, the list one parameter (a JSON array on SQLite, an array of `type` on PostgreSQL): the statement's text is the
 * same whatever the list's length, where an IN list is a new statement to compile and prepare each time.
 */
export function among(dialect: Dialect, column: string, values: ReadonlyArray<string | number>, type: "text" | "bigint") {
  return dialect === "postgres"
    ? sql<boolean>`${sql.ref(column)} = any(${[...values]}::${sql.raw(type)}[])`
    : sql<boolean>`${sql.ref(column)} in (select value from json_each(${JSON.stringify(values)}))`;
}

/** Kept for the life of a store's repositories; on SQLite the same text is the same prepared statement (database.ts). */
export class StatementTexts {
  private readonly texts = new Map<string, string>();

  of(statement: string, rows: number, make: (rows: number) => string): string {
    const key = `${statement}:${rows}`;
    let text = this.texts.get(key);
    if (text === undefined) this.texts.set(key, (text = make(rows)));
    return text;
  }
}

/** A connection (or transaction) with its dialect and statement texts: what a bulk reader or writer takes. */
export interface BulkStore {
  db: Kysely<Schema>;
  dialect: Dialect;
  texts: StatementTexts;
}

/** The text of an INSERT of `rows` rows of `columns`; on a conflict on `key`, `update`'s columns take the new values (none: the row is skipped). */
export function insertText({ db, texts }: BulkStore, table: keyof Schema & string, columns: readonly string[], key: readonly string[],
  update: readonly string[], rows: number): string {
  return texts.of(`insert ${table}`, rows, (n) => {
    const placeholder = Object.fromEntries(columns.map((c) => [c, 0])) as never;
    return db.insertInto(table).values(Array.from({ length: n }, () => placeholder)).onConflict((oc) => update.length === 0
      ? oc.columns(key as never).doNothing() : oc.columns(key as never).doUpdateSet(Object.fromEntries(update.map((c) => [c, sql.ref(`excluded.${c}`)])) as never))
      .compile().sql;
  });
}
