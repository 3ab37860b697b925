import { createServer, type AddressInfo } from "node:net";
import SqliteDatabase from "better-sqlite3";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { StoreFault, isStoreError, storeFaultOf } from "../../src/storage/store-faults.js";

const driverError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe("storeFaultOf tells a busy or full store from other driver errors", () => {
  it("reads SQLite's and PostgreSQL's disk-full codes as a full store, naming where", () => {
    for (const code of ["SQLITE_FULL", "53100"]) {
      const fault = storeFaultOf(driverError(code, "database or disk is full"), "/data/store.sqlite");
      expect(fault).toBeInstanceOf(StoreFault);
      expect(fault!.kind).toBe("full");
      expect(fault!.message).toBe(`disk full: the database /data/store.sqlite cannot grow (${code}: database or disk is full)`);
    }
  });

  it("reads lock codes as a busy store", () => {
    for (const code of ["SQLITE_BUSY", "SQLITE_LOCKED", "55P03"]) {
      expect(storeFaultOf(driverError(code, "locked"), "db")?.kind).toBe("busy");
    }
  });

  it("leaves every other error alone", () => {
    expect(storeFaultOf(driverError("SQLITE_CONSTRAINT_UNIQUE", "UNIQUE constraint failed"), "db")).toBeUndefined();
    expect(storeFaultOf(new Error("no code"), "db")).toBeUndefined();
    expect(storeFaultOf("a string", "db")).toBeUndefined();
  });
});

describe("isStoreError tells the database's errors from the service's own (store_errors_total)", () => {
  it("counts SQLite's errors, PostgreSQL's errors and a refused PostgreSQL connection", async () => {
    const sqlite = new SqliteDatabase(":memory:");
    const sqliteError = (() => {
      try {
        sqlite.exec("select * from no_such_table");
      } catch (error) {
        return error;
      }
    })();
    sqlite.close();
    expect(isStoreError(sqliteError)).toBe(true);
    // pg's DatabaseError as its protocol parser fills it in from the server's ErrorResponse.
    expect(isStoreError(Object.assign(new pg.DatabaseError("relation \"x\" does not exist", 0, "error"), { severity: "ERROR", code: "42P01" }))).toBe(true);
    // A port that was free a moment ago: the connection is refused.
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo;
        server.close(() => resolve(port));
      });
    });
    const client = new pg.Client({ connectionString: `postgres://nobody@127.0.0.1:${port}/none` });
    const refused = await client.connect().catch((error: unknown) => error);
    expect(isStoreError(refused)).toBe(true);
    expect(isStoreError(new StoreFault("busy", "db", "SQLITE_BUSY"))).toBe(true);
  });

  it("leaves the service's own errors alone", () => {
    expect(isStoreError(new TypeError("x is undefined"))).toBe(false);
    expect(isStoreError(driverError("ERR_INVALID_ARG_TYPE", "bad argument"))).toBe(false);
    expect(isStoreError(undefined)).toBe(false);
  });
});
