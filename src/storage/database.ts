// Opens the database named by a URL: a file path or file: URL is SQLite (the embedded default),
// postgres:// is PostgreSQL. Sets the SQLite pragmas and runs migrations; the only place that knows the driver.
import { mkdirSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { Worker } from "node:worker_threads";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import SqliteDatabase from "better-sqlite3";
import { DEFAULT_MIGRATION_TABLE, Kysely, Migrator, PostgresAdapter, PostgresDialect, SqliteDialect, sql, type MigrationProvider } from "kysely";
import pg from "pg";
import { BadSetting, envNumber } from "../env-number.js";
import { migrations } from "./migrations/index.js";
import type { Schema } from "./schema.js";
import { StoreFault, storeFaultOf } from "./store-faults.js";

export type Dialect = "sqlite" | "postgres";

export interface Database {
  readonly db: Kysely<Schema>;
  readonly dialect: Dialect;
  /** The store, for operators: a SQLite file's path, or a PostgreSQL server and database (no credentials). */
  readonly location: string;
  /** SQLite: the directories that opening created for the file, outermost first (none when they all existed). */
  readonly createdDirectories: readonly string[];
  /**
   * Runs `work` in a transaction. On SQLite it holds the store's one write lock from its start (BEGIN
   * IMMEDIATE, so no read inside can fail to upgrade), waiting for it at most the busy timeout
   * (STORE_BUSY_TIMEOUT_MS), else throwing a busy StoreFault before `work` runs. On PostgreSQL it holds
   * no lock of the whole store: a transaction that reads what it then writes locks those rows
   * (`lockingRows`), and any lock wait inside is bounded by the busy timeout. `unbounded` waits as long
   * as it takes. On an error the first one is thrown: a ROLLBACK after SQLite rolled back by itself (a
   * full disk) is not run, and a failing one never replaces it.
   */
  writeTransaction<T>(work: (trx: Kysely<Schema>) => Promise<T>, options?: { unbounded?: boolean }): Promise<T>;
  /** The busy, full or unreachable fault `error` is, if it is one (see store-faults.ts). */
  faultOf(error: unknown): StoreFault | undefined;
  /** Whether the store answers a query now (readiness): false on any error, or with no answer within the busy timeout (at least 1 s). */
  answers(): Promise<boolean>;
  /** Told of every wait for the write lock (the service's metrics). */
  readonly observer: StoreObserver;
  close(): Promise<void>;
}

/** Database.writeTransaction, for a repository that writes. */
export type WriteTransaction = Database["writeTransaction"];

export const isPostgres = (db: Kysely<Schema>) => db.getExecutor().adapter instanceof PostgresAdapter;

/**
 * `query`, locking the rows it reads until the transaction ends on PostgreSQL (`share`: beside other such readers; `update`: alone),
 * where a writeTransaction locks nothing else; a lock held by a writer is waited for, and the rows read as it committed them. SQLite
 * needs none: its writeTransaction holds the store's one write lock.
 */
export function lockingRows<Q extends { forShare(): Q; forUpdate(): Q }>(db: Kysely<Schema>, query: Q, mode: "share" | "update"): Q {
  if (!isPostgres(db)) return query;
  return mode === "share" ? query.forShare() : query.forUpdate();
}

/** What the store reports of its waits, for the service's metrics. */
export interface StoreObserver {
  /**
   * A write found the write lock held and waited `seconds` for it: `acquired`, or gave up at the
   * busy timeout (a busy fault). A write that got the lock at its first try is no wait.
   */
  lockWaited(seconds: number, acquired: boolean): void;
  /**
   * A read that adds an enterprise's pending usage events to the rollups first could not (another writer held the lock past the busy
   * timeout, or the disk was full), and read the raw events instead: exact, and as slow as a raw scan.
   */
  rollupsDeferred(reason: "busy" | "full"): void;
}

const UNOBSERVED: StoreObserver = { lockWaited: () => {}, rollupsDeferred: () => {} };

/** The page size of a new SQLite store: see openDatabase. */
export const NEW_STORE_PAGE_BYTES = 16384;

/** The write-ahead log's size at which a commit checkpoints it: see openDatabase. */
const WAL_AUTOCHECKPOINT_BYTES = 64 * 2 ** 20;

export const DEFAULT_DATABASE_URL = "./data/enterprise-admin.sqlite";

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

/**
 * The SQLite file a --db names: a path, or a file: URL (any case; `file:///abs`, or `file:rel` relative to the working directory, as
 * RFC 8089 allows). A query or fragment is refused: SQLite's URI options (`?mode=ro`) are not read, and must not seem to be.
 */
export function sqliteFilePath(url: string): string {
  if (!/^file:/i.test(url)) return url;
  const rest = url.slice("file:".length);
  if (/[?#]/.test(rest)) throw new BadSetting("--db/DATABASE_URL: a file: URL takes no query or fragment (SQLite's URI options are not read)");
  try {
    return rest.startsWith("//") ? fileURLToPath(`file:${rest}`) : decodeURIComponent(rest);
  } catch {
    throw new BadSetting(`--db/DATABASE_URL: ${JSON.stringify(url)} is not a file: URL`);
  }
}

export interface OpenOptions {
  /**
   * SQLite file only: copy the write-ahead log back on a worker thread (for the server: the
   * checkpoint a commit runs at 64 MiB of log then finds little left to copy; checkpoints were 25%
   * of the ingestion RPC's time on a 10-million-event store).
   */
  backgroundCheckpoints?: boolean;
  /** Told of the waits for the write lock; none by default. */
  observer?: StoreObserver;
  /** Where SQLITE_CACHE_MIB and STORE_BUSY_TIMEOUT_MS are read; process.env by default. */
  env?: NodeJS.ProcessEnv;
  /**
   * PostgreSQL, a server's store: no statement runs longer than this (a call's longest life) nor waits for a lock past the busy
   * timeout, so a call that has ended, or a lock an operator holds, cannot keep the pool's connections. The CLI passes none: its
   * imports and rebuilds wait as long as they must.
   */
  statementTimeoutMs?: number;
  /** PostgreSQL: the connections' application_name (pg_stat_activity), unless the URL names one; "enterprise-admin" by default. */
  applicationName?: string;
}

/**
 * This pool's parsers, not the driver's process-wide ones: BIGINT (int8) values are read as numbers (Unix seconds, keys, counts);
 * a value that may pass 2^53 is selected as text.
 */
const POSTGRES_TYPES = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === pg.types.builtins.INT8 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

export function openDatabase(url: string, options: OpenOptions = {}): Database {
  const observer = options.observer ?? UNOBSERVED;
  const env = options.env ?? process.env;
  if (isPostgresUrl(url)) {
    const busyTimeout = busyTimeoutMs(env);
    // A call waits for a free connection no longer than for the write lock: then a busy 503 (store-faults.ts), not a hang.
    const serving = options.statementTimeoutMs === undefined ? {} : { statement_timeout: options.statementTimeoutMs, lock_timeout: Math.max(1, busyTimeout) };
    const pool = new pg.Pool({ connectionString: url, max: 10, connectionTimeoutMillis: waitAtLeastASecond(busyTimeout), types: POSTGRES_TYPES,
      application_name: options.applicationName ?? "enterprise-admin", ...serving });
    // An idle client that the server drops (restart, failover, terminate) emits "error"; unhandled, it
    // would end the process. The pool discards that client and the next query connects anew.
    pool.on("error", () => {});
    // A client in use has no such listener (the pool keeps it for idle ones): terminated under a call (pg_terminate_backend, a fast
    // restart, idle_in_transaction_session_timeout), its "error" would end the process too. The call's query fails with the error.
    pool.on("connect", (client) => client.on("error", () => {}));
    const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool }) });
    const location = postgresLocation(url);
    const writeTransaction: Database["writeTransaction"] = (work, options = {}) => db.connection().execute(async (connection) => {
      await sql`begin`.execute(connection);
      // Bounds the wait for the ingestion lock (and any row lock) inside this transaction; unbounded, lifts a server's bound too.
      // PostgreSQL's 0 is no timeout at all: a busy timeout of 0 waits 1 ms, as the pool's own setting does.
      await sql`select set_config('lock_timeout', ${options.unbounded ? "0" : `${Math.max(1, busyTimeout)}ms`}, true)`.execute(connection);
      return commitOrRollBack(connection, work, () => true);
    });
    return { db, dialect: "postgres", location, createdDirectories: [], writeTransaction, faultOf: (error) => storeFaultOf(error, location),
      answers: answersOf(db, waitAtLeastASecond(busyTimeout)), observer, close: () => db.destroy() };
  }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1];
  if (scheme !== undefined && scheme.toLowerCase() !== "file") {
    throw new BadSetting(`--db/DATABASE_URL: a ${scheme}:// URL is no database of this service's (a SQLite file path or file: URL, or postgres://)`);
  }
  const path = sqliteFilePath(url);
  const createdDirectories = path === ":memory:" ? [] : makeDirectories(dirname(path));
  const sqlite = openSqliteFile(path);
  sqlite.pragma("synchronous = NORMAL");
  const busyTimeout = busyTimeoutMs(env);
  sqlite.pragma(`busy_timeout = ${busyTimeout}`);
  sqlite.pragma("foreign_keys = ON");
  // A page cache of up to 1 GiB (SQLite's default is 2 MiB): the usage query reads a few hundred
  // pages of running totals and raw events per call, and a page in this cache costs no read. (The
  // OS cache is not enough: on the measured VM it was dropped under the process, and cold reads
  // made the query's p99 several times its p50.) Memory grows to this only as pages are read.
  sqlite.pragma(`cache_size = -${cacheMiB(env) * 1024}`);
  sqlite.pragma("temp_store = MEMORY");
  // Checkpoint every 64 MiB of WAL instead of every 1,000 pages: an ingestion batch rewrites a few
  // megabytes, and at the default nearly every commit ran a checkpoint (copy back and fsync) of its own.
  const pageBytes = sqlite.pragma("page_size", { simple: true }) as number;
  sqlite.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_BYTES / pageBytes}`);
  // A log that grew past that (a reader held its snapshot through an import, or the disk filled) is cut back to it at the first commit
  // after a checkpoint has copied it all, rather than keep its largest size until the last connection closes.
  sqlite.pragma(`journal_size_limit = ${WAL_AUTOCHECKPOINT_BYTES}`);
  const checkpointer = options.backgroundCheckpoints && path !== ":memory:" ? startWalCheckpointer(path) : undefined;
  const statements = withStatementCache(sqlite);
  const db = new Kysely<Schema>({ dialect: new SqliteDialect({ database: statements }) });
  const close = async () => {
    await db.destroy();
    await checkpointer?.stop();
  };
  const location = path;
  const writeTransaction: Database["writeTransaction"] = async (work, options = {}) => {
    const started = performance.now();
    const deadline = started + busyTimeout;
    let waited = false;
    for (;;) {
      // The lock is tried without SQLite's busy wait, which would block this thread (and every other
      // request of the server) while it sleeps; between tries the connection is free for reads.
      const outcome = await db.connection().execute(async (connection) => {
        if (!beginImmediate(sqlite, busyTimeout)) return undefined;
        if (waited) observer.lockWaited((performance.now() - started) / 1000, true);
        return { value: await commitOrRollBack(connection, work, () => sqlite.inTransaction) };
      });
      if (outcome) return outcome.value;
      waited = true;
      if (!options.unbounded && performance.now() >= deadline) {
        observer.lockWaited((performance.now() - started) / 1000, false);
        throw new StoreFault("busy", location, `another writer held the write lock past the ${busyTimeout} ms busy timeout`);
      }
      await sleep(LOCK_POLL_MS);
    }
  };
  return { db, dialect: "sqlite", location, createdDirectories, writeTransaction, faultOf: (error) => storeFaultOf(error, location),
    answers: answersOf(db, waitAtLeastASecond(busyTimeout)),
    observer, close };
}

/**
 * Asked twice: a pool connection the server ended while it was idle fails once, and the pool then opens a new one. False when no
 * answer came within `withinMs`: a hung PostgreSQL (stopped, or its host gone without a reset) never answers on an open connection.
 */
const answersOf = (db: Kysely<Schema>, withinMs: number) => async () => {
  const once = () => sql`select 1`.execute(db).then(() => true, () => false);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(resolve, withinMs, false)));
  try {
    return await Promise.race([(async () => (await once()) || once())(), late]);
  } finally {
    clearTimeout(timer);
  }
};

/** Makes `directory` and its missing parents; returns those it made, outermost first. */
function makeDirectories(directory: string): string[] {
  const first = mkdirSync(directory, { recursive: true });
  if (first === undefined) return [];
  const made = [directory];
  while (resolve(made[0]!) !== resolve(first)) made.unshift(dirname(made[0]!));
  return made;
}

/** How often a writer waiting for SQLite's write lock tries it again. */
const LOCK_POLL_MS = 1;

/** BEGIN IMMEDIATE: takes the write lock now, or returns false at once when another connection holds it. */
function beginImmediate(sqlite: SqliteDatabase.Database, busyTimeout: number): boolean {
  sqlite.pragma("busy_timeout = 0");
  try {
    sqlite.exec("begin immediate");
    return true;
  } catch (error) {
    if (String((error as { code?: unknown }).code).startsWith("SQLITE_BUSY")) return false;
    throw error;
  } finally {
    sqlite.pragma(`busy_timeout = ${busyTimeout}`);
  }
}

/**
 * Runs `work` in the transaction just begun on `connection` and commits it; on an error rolls back
 * (when `inTransaction` says there is still a transaction: SQLite rolls back by itself on a full
 * disk) and throws that first error, whatever the ROLLBACK does.
 */
async function commitOrRollBack<T>(connection: Kysely<Schema>, work: (trx: Kysely<Schema>) => Promise<T>, inTransaction: () => boolean): Promise<T> {
  try {
    const value = await work(connection);
    await sql`commit`.execute(connection);
    return value;
  } catch (error) {
    if (inTransaction()) await sql`rollback`.execute(connection).catch(() => {});
    throw error;
  }
}

/**
 * The store's file in WAL mode, its header read and a write tried: a folder, a file that is not SQLite's or one this user may not write
 * is a bad --db naming it; a full disk is a StoreFault.
 */
function openSqliteFile(path: string): SqliteDatabase.Database {
  let sqlite: SqliteDatabase.Database | undefined;
  try {
    sqlite = new SqliteDatabase(path);
    sqlite.pragma("schema_version"); // reads the header, writes nothing: a new store still takes the page size below
    // 16 KiB pages for a new store (SQLite's default is 4 KiB; an existing store keeps its own, as the
    // pragma changes nothing once the file has pages). The log and the checkpoint write a page per call
    // (on this VM about 10 µs a system call), so a 10-million-event import's commit, which writes 1.2 GB
    // to the log and copies it back, took 11.3 to 14.4 s with 4 KiB pages and 7.3 to 11.8 s with 16 KiB
    // ones (3.4 to 4.8 s less in each of three back-to-back pairs). An ingestion batch's events and running totals land among the current day's rows, nearly
    // every 4 KiB page of which it touched anyway (docs/architecture.md, SQLite settings).
    sqlite.pragma(`page_size = ${NEW_STORE_PAGE_BYTES}`);
    sqlite.pragma("journal_mode = WAL");
    if (path !== ":memory:") tryWriting(sqlite);
    return sqlite;
  } catch (error) {
    sqlite?.close();
    const code = (error as { code?: unknown }).code;
    if (code === "SQLITE_NOTADB") throw new BadSetting(`--db/DATABASE_URL: ${path} is not a SQLite database`);
    if (code === "SQLITE_CANTOPEN") throw new BadSetting(`--db/DATABASE_URL: ${path} cannot be opened as a SQLite file (a folder, or no permission)`);
    if (typeof code === "string" && code.startsWith("SQLITE_READONLY")) {
      throw new BadSetting(`--db/DATABASE_URL: ${path} cannot be written (${code}): SQLite writes the file and, beside it, its -wal and -shm ` +
        "files, which it creates in that folder; check the owner and permissions of all of them");
    }
    throw storeFaultOf(error, path) ?? error;
  }
}

/**
 * SQLite opens a file it may not write read-only and says so only at the first write, so a write is tried at once (the header's
 * user_version set to itself, then rolled back). Not when another process holds the write lock: that is no fault, and is not waited for.
 */
function tryWriting(sqlite: SqliteDatabase.Database): void {
  const busyTimeout = Number(sqlite.pragma("busy_timeout", { simple: true }));
  sqlite.pragma("busy_timeout = 0"); // better-sqlite3's default would block the thread 5 s for the lock
  try {
    sqlite.exec("begin immediate");
  } catch (error) {
    if (String((error as { code?: unknown }).code).startsWith("SQLITE_BUSY")) return;
    throw error;
  } finally {
    sqlite.pragma(`busy_timeout = ${busyTimeout}`);
  }
  try {
    sqlite.pragma(`user_version = ${Number(sqlite.pragma("user_version", { simple: true }))}`);
  } finally {
    sqlite.exec("rollback");
  }
}

/** A PostgreSQL URL without its credentials or parameters: postgres://host:port/database. */
function postgresLocation(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
}

/** How often the background checkpointer copies the log back (a no-op when nothing is new). */
const CHECKPOINT_INTERVAL_MS = 100;

/**
 * Copies the write-ahead log back on a worker thread with a connection of its own (WAL lets a
 * PASSIVE checkpoint run beside the writer and the readers, blocking neither). The connection keeps
 * its own checkpoint at 64 MiB of log: under steady writes a background checkpoint never quite
 * finishes, and only the writer's own, run between its commits, lets the log start over; it then
 * finds nearly every frame copied already. (A background TRUNCATE instead held the writer's lock
 * and failed an ingestion that had begun reading: SQLITE_BUSY, no busy wait for an upgrade.)
 */
function startWalCheckpointer(path: string) {
  const worker = new Worker(new URL("./wal-checkpointer.mjs", import.meta.url), { workerData: { path, intervalMs: CHECKPOINT_INTERVAL_MS } });
  worker.unref(); // never what keeps the process alive
  worker.on("error", () => {}); // a failed worker leaves the connection's own checkpoints doing it all
  const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  let stopping = false;
  return {
    async stop() {
      if (!stopping) {
        stopping = true;
        worker.ref(); // until it has closed its connection (the last one checkpoints the whole log)
        worker.postMessage("stop");
      }
      await exited;
    },
  };
}

/**
 * Kysely's SQLite driver prepares every statement anew; reusing prepared statements by SQL text
 * removes most of the per-query cost on hot lookups (the same SQL text is the same statement).
 */
function withStatementCache(sqlite: SqliteDatabase.Database) {
  const cache = new Map<string, SqliteDatabase.Statement>();
  return {
    close: () => sqlite.close(),
    prepare(sql: string) {
      let statement = cache.get(sql);
      if (!statement) {
        if (cache.size >= 1000) cache.clear();
        statement = sqlite.prepare(sql);
        cache.set(sql, statement);
      }
      return statement;
    },
  };
}

/** SQLITE_CACHE_MIB (default 1024): the SQLite page cache's ceiling per connection, in MiB. */
const cacheMiB = (env: NodeJS.ProcessEnv) => envNumber(env, "SQLITE_CACHE_MIB", { fallback: 1024, min: 2, max: 65536 });

/**
 * STORE_BUSY_TIMEOUT_MS (default 5000): how long a write waits for the store's write lock (SQLite's,
 * or PostgreSQL's ingestion lock) before it gives up with a busy fault (503 to a caller).
 */
const busyTimeoutMs = (env: NodeJS.ProcessEnv) => envNumber(env, "STORE_BUSY_TIMEOUT_MS", { fallback: 5000, min: 0, max: 600_000 });

/** The busy timeout, at least a second: how long a call waits for a pool connection, and readiness for an answer. */
const waitAtLeastASecond = (busyTimeout: number) => Math.max(1000, busyTimeout);

const provider: MigrationProvider = { getMigrations: async () => migrations };

/** Applies every pending migration; throws with the failing migration's name. */
export async function migrateToLatest(database: Database): Promise<string[]> {
  await refuseUnknownMigrations(database);
  const migrator = new Migrator({ db: database.db, provider });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === "Error")?.migrationName ?? "unknown";
    throw new Error(`migration ${failed} failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}

/**
 * A store that records a migration this version does not have was made by a pre-release schema (the
 * chain that the baseline replaced) or by a newer version: either way it is refused with one line
 * saying what to do, before Kysely's migrator would call it corrupted.
 */
async function refuseUnknownMigrations(database: Database): Promise<void> {
  const tables = await database.db.introspection.getTables({ withInternalKyselyTables: true });
  if (!tables.some((t) => t.name === DEFAULT_MIGRATION_TABLE)) return;
  const { rows } = await sql<{ name: string }>`select name from ${sql.table(DEFAULT_MIGRATION_TABLE)} order by name`.execute(database.db);
  const unknown = rows.map((r) => r.name).find((name) => !(name in migrations));
  if (unknown === undefined) return;
  const first = Object.keys(migrations)[0]!;
  throw new Error(unknown < first
    ? `database ${database.location} was made by a pre-release schema (migration ${unknown}) and must be recreated: ` +
      "run migrate on a new SQLite file or PostgreSQL database, then import directory and import usage into it again"
    : `database ${database.location} was migrated by a newer version of enterprise-admin (migration ${unknown}): use that version`);
}
