// A store that cannot be reached at all: PostgreSQL refusing the connection, an unknown host, a
// database or role that does not exist, a refused password. Told apart from the driver's errors
// here, the only place that knows their codes, so the command line says it in one line naming the
// store instead of the driver's words (or a migration's name) alone.

/** The store named by `location` cannot be used: `reason` says why, in a person's words. */
export class StoreUnreachable extends Error {
  constructor(readonly location: string, readonly reason: string) {
    super(`cannot connect to the database ${location}: ${reason}`);
    this.name = "StoreUnreachable";
  }
}

/** Node's socket errors (pg's `code`) of a connection that could not be made, in a person's words (store-faults.ts's too). */
export const SOCKET_FAILURES: Readonly<Record<string, string>> = {
  ECONNREFUSED: "connection refused (is PostgreSQL running there?)",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host name lookup failed",
  ETIMEDOUT: "connection timed out",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
};

/** Node's socket errors and PostgreSQL's SQLSTATEs of a connection that never worked; "": PostgreSQL's own words are clear. */
const REASONS: Record<string, string> = {
  ...SOCKET_FAILURES,
  "3D000": "", // database does not exist
  "28000": "", // role does not exist, or not allowed by pg_hba.conf
  "28P01": "", // password authentication failed
};

/** The unreachable store `error` (or an error it was caused by) says, if any; `location` names the store. */
export function storeUnreachableOf(error: unknown, location: string): StoreUnreachable | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof StoreUnreachable) return e;
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && code in REASONS) return new StoreUnreachable(location, REASONS[code] || e.message);
  }
  return undefined;
}
