import { describe, expect, it } from "vitest";
import { StoreFault, storeFaultOf } from "../../src/storage/store-faults.js";

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
