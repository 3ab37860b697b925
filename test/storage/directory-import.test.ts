import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DirectoryFile } from "../../src/domain/directory-file.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { migrateToLatest, openDatabase, type Database } from "../../src/storage/database.js";
import { DepartmentRepository } from "../../src/storage/department-repository.js";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/databases.js";
import { acme } from "../helpers/fixtures.js";

describe.each(dialects)("directory import on %s", (dialect) => {
  let testDb: TestDatabase;
  let database: Database;
  let departments: DepartmentRepository;

  beforeEach(async () => {
    testDb = await createTestDatabase(dialect);
    database = openDatabase(testDb.url);
    await migrateToLatest(database);
    departments = new DepartmentRepository(database.db);
  });
  afterEach(async () => {
    await database.close();
    await testDb.drop();
  });

  const paths = async () => Object.fromEntries((await departments.listAll("acme"))
    .map((d) => [d.department_id, `${d.full_path}@${d.depth}`]));

  it("stores full_path and depth derived from the tree", async () => {
    await importDirectory(database, acme);
    expect(await paths()).toEqual({
      "100": "Acme Corp@0", "110": "Acme Corp/Engineering@1", "111": "Acme Corp/Engineering/Platform@2",
      "112": "Acme Corp/Engineering/Mobile_Apps@2", "120": "Acme Corp/Sales@1", "121": "Acme Corp/Sales/Sales Engineering@2",
    });
  });

  it("is idempotent: importing the same file twice leaves the same rows", async () => {
    await importDirectory(database, acme);
    const first = await departments.listAll("acme");
    await importDirectory(database, acme);
    expect(await departments.listAll("acme")).toEqual(first);
  });

  it("renaming a department rewrites the full_path of every descendant", async () => {
    await importDirectory(database, acme);
    await importDirectory(database, { enterprise: acme.enterprise, departments: [{ department_id: "110", parent_department_id: "100", name: "R&D" }], members: [] });
    expect(await paths()).toMatchObject({ "110": "Acme Corp/R&D@1", "111": "Acme Corp/R&D/Platform@2", "112": "Acme Corp/R&D/Mobile_Apps@2" });
  });

  it("moving a department changes its and its descendants' path and depth", async () => {
    await importDirectory(database, acme);
    await importDirectory(database, { enterprise: acme.enterprise, departments: [{ department_id: "110", parent_department_id: "121", name: "Engineering" }], members: [] });
    expect(await paths()).toMatchObject({
      "110": "Acme Corp/Sales/Sales Engineering/Engineering@3",
      "111": "Acme Corp/Sales/Sales Engineering/Engineering/Platform@4",
    });
  });

  it("a file that would make a cycle changes nothing", async () => {
    await importDirectory(database, acme);
    const before = await departments.listAll("acme");
    const cyclic: DirectoryFile = { enterprise: { ...acme.enterprise, name: "Renamed" }, departments: [
      { department_id: "120", parent_department_id: "121", name: "Sales" },
      { department_id: "130", parent_department_id: "100", name: "New" },
    ], members: [] };
    await expect(importDirectory(database, cyclic)).rejects.toThrow("departments: cycle through");
    expect(await departments.listAll("acme")).toEqual(before);
    const enterprise = await database.db.selectFrom("enterprise").select("name").where("enterprise_id", "=", "acme").executeTakeFirstOrThrow();
    expect(enterprise.name).toBe("Acme Corp");
  });

  it("stores each member's e-mail folded by one-to-one case pairs: É to é; the Kelvin and Angstrom signs and İ stay themselves", async () => {
    const emails = ["\u212Aate@acme.example", "Li.Lei@ACME.example", "\u00C9LODIE@acme.example", "\u212Bngstr\u00F6m@acme.example", "\u0130pek@acme.example"];
    await importDirectory(database, { ...acme, members: emails.map((email, i) => ({ user_id: `80${i}`, email, account_type: 1, department_ids: ["111"] })) });
    const rows = await database.db.selectFrom("member").select("email_folded").where("enterprise_id", "=", "acme").orderBy("user_id").execute();
    expect(rows.map((r) => r.email_folded)).toEqual([
      "\u212Aate@acme.example", "li.lei@acme.example", "\u00E9lodie@acme.example", "\u212Bngstr\u00F6m@acme.example", "\u0130pek@acme.example",
    ]);
  });

  it("a member in an unknown department rejects the whole file", async () => {
    const bad: DirectoryFile = { ...acme, members: [...acme.members, { user_id: "9", email: "x@acme.example", account_type: 1, department_ids: ["999"] }] };
    await expect(importDirectory(database, bad)).rejects.toThrow('members[2].department_ids: department "999" does not exist');
    expect(await departments.listAll("acme")).toEqual([]);
  });

  it("finds by ids with the root, lists children in id order and searches names case-insensitively", async () => {
    await importDirectory(database, acme);
    const found = await departments.findByIds("acme", ["111", "nope"], true);
    expect(found.map((d) => d.department_id).sort()).toEqual(["100", "111"]);
    expect((await departments.listChildren("acme", "110", undefined, 10)).map((d) => d.department_id)).toEqual(["111", "112"]);
    expect((await departments.listChildren("acme", "110", "111", 10)).map((d) => d.department_id)).toEqual(["112"]);
    expect((await departments.searchByName("acme", "engin", undefined, 10)).map((d) => d.department_id)).toEqual(["110", "121"]);
    expect((await departments.searchByName("acme", "_", undefined, 10)).map((d) => d.department_id)).toEqual(["112"]);
    expect(await departments.findByIds("globex", ["111"], true)).toEqual([]);
  });
});
