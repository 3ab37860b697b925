// Faults of the store that pass by themselves: busy (another writer held the write lock past the
// bounded wait), full (no disk space) and unreachable (the PostgreSQL server refused or ended the
// connection: a restart, a failover, an outage). Told apart from the drivers' errors here (the socket
// errors with store-unreachable.ts); callers get "retry later" for them instead of a server fault.
import { SOCKET_FAILURES } from "./store-unreachable.js";

export type StoreFaultKind = "busy" | "full" | "unreachable";

/** A busy, full or unreachable store, with what an operator needs to act: which store, and the driver's own words. */
export class StoreFault extends Error {
  constructor(
    readonly kind: StoreFaultKind,
    /** The store: a SQLite file's path, or a PostgreSQL server and database (never its credentials). */
    readonly location: string,
    readonly detail: string,
  ) {
    super(kind === "full" ? `disk full: the database ${location} cannot grow (${detail})`
      : kind === "busy" ? `database busy: ${location} (${detail})` : `database unreachable: ${location} (${detail})`);
    this.name = "StoreFault";
  }
}

/** SQLite's result codes (better-sqlite3's `code`) and PostgreSQL's SQLSTATEs (pg's `code`) of each kind. */
const BUSY_CODES = new Set(["SQLITE_BUSY", "SQLITE_BUSY_RECOVERY", "SQLITE_BUSY_SNAPSHOT", "SQLITE_BUSY_TIMEOUT", "SQLITE_LOCKED", "55P03"]);
/** SQLITE_IOERR_SHMSIZE: the -shm file beside a SQLite store could not grow (opening it on a full disk, say). */
const FULL_CODES = new Set(["SQLITE_FULL", "SQLITE_IOERR_SHMSIZE", "53100"]);
/**
 * PostgreSQL's SQLSTATEs of a server shutting down, starting up or ending the connection (57P01 to 57P03, class 08), and Node's socket
 * errors of a connection that could not be made or was lost (pg's `code`).
 */
const UNREACHABLE_CODES = new Set(["57P01", "57P02", "57P03", "08000", "08001", "08003", "08004", "08006", ...Object.keys(SOCKET_FAILURES),
  "ECONNRESET", "EPIPE"]);
const POOL_WAIT_TIMEOUT = "timeout exceeded when trying to connect";

/** The fault `error` is, if it is a busy, full or unreachable store's; `location` names the store. */
export function storeFaultOf(error: unknown, location: string): StoreFault | undefined {
  if (error instanceof StoreFault) return error;
  // pg-pool's error, without a code, when no connection came free within connectionTimeoutMillis.
  if (error instanceof Error && error.message === POOL_WAIT_TIMEOUT) return new StoreFault("busy", location, "no connection of the pool came free in time");
  if (error instanceof Error && CONNECTION_LOST.test(error.message)) return new StoreFault("unreachable", location, error.message);
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return undefined;
  const detail = `${code}: ${(error as Error).message}`;
  if (FULL_CODES.has(code)) return new StoreFault("full", location, detail);
  if (BUSY_CODES.has(code)) return new StoreFault("busy", location, detail);
  if (UNREACHABLE_CODES.has(code)) return new StoreFault("unreachable", location, detail);
  return undefined;
}

/** pg's own errors, without a code, for a connection lost under a query (pg_terminate_backend, a restart, the network). */
const CONNECTION_LOST = /^(Connection terminated|Client has encountered a connection error and is not queryable)/;

/**
 * Whether `error` came from the store: a store fault, an error SQLite or PostgreSQL reported
 * (better-sqlite3's SqliteError; pg's DatabaseError, which carries a severity), or a failed or lost
 * connection to the PostgreSQL server (the only connections a server opens).
 */
export function isStoreError(error: unknown): boolean {
  if (error instanceof StoreFault) return true;
  const e = error as { name?: unknown; code?: unknown; severity?: unknown; syscall?: unknown; message?: unknown } | null;
  if (e === null || typeof e !== "object") return false;
  return e.name === "SqliteError" || (typeof e.code === "string" && typeof e.severity === "string") || e.syscall === "connect"
    || (typeof e.message === "string" && CONNECTION_LOST.test(e.message));
}
