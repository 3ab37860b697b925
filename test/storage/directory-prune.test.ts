// `import directory --prune` and `--dry-run` against the store: what is removed, what stays (a former
// member's row and history), what a dry run leaves untouched, and a former member restored.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { DirectoryFile } from "../../src/domain/directory-file.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { migrateToLatest, openDatabase, type Database } from "../../src/storage/database.js";
import { DepartmentRepository } from "../../src/storage/department-repository.js";
import { UsageRepository } from "../../src/storage/usage-repository.js";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/databases.js";
import { acme, globex } from "../helpers/fixtures.js";

/** acme without Sales (120) and its child (121), and without 7002 who sat there. */
const acmeWithoutSales: DirectoryFile = {
  ...acme,
  departments: acme.departments.filter((d) => !["120", "121"].includes(d.department_id)),
  members: acme.members.filter((m) => m.user_id !== "7002"),
};

describe.each(dialects)("directory import with --prune on %s", (dialect) => {
  let testDb: TestDatabase;
  let database: Database;
  let departments: DepartmentRepository;
  let usage: UsageRepository;

  beforeAll(async () => {
    testDb = await createTestDatabase(dialect);
    database = openDatabase(testDb.url);
    await migrateToLatest(database);
    departments = new DepartmentRepository(database.db);
    usage = new UsageRepository(database);
  });
  afterAll(async () => {
    await database.close();
    await testDb.drop();
  });
  // One database for the file: each case starts from acme and globex imported afresh.
  beforeEach(async () => {
    await database.db.deleteFrom("enterprise").execute();
    await importDirectory(database, acme);
    await importDirectory(database, globex);
  });

  const departmentIds = async (enterpriseId = "acme") => (await departments.listAll(enterpriseId)).map((d) => d.department_id).sort();
  const members = async (enterpriseId = "acme") => (await database.db.selectFrom("member")
    .select(["user_id", "email", "removed_at"]).where("enterprise_id", "=", enterpriseId).orderBy("user_id").execute())
    .map((m) => ({ user_id: m.user_id, email: m.email, former: m.removed_at !== null }));
  const placements = async () => (await database.db.selectFrom("member_department").select(["user_id", "department_id"])
    .where("enterprise_id", "=", "acme").orderBy("user_id").orderBy("department_id").execute()).map((r) => `${r.user_id}@${r.department_id}`);

  it("without --prune, departments and members absent from the file stay", async () => {
    const summary = await importDirectory(database, acmeWithoutSales);
    expect(summary).toStrictEqual({
      enterprise_id: "acme", departments: 4, members: 1, removed_departments: [], removed_members: [], restored_members: [], dry_run: false,
    });
    expect(await departmentIds()).toStrictEqual(["100", "110", "111", "112", "120", "121"]);
    expect((await members()).map((m) => m.former)).toStrictEqual([false, false]);
  });

  it("--prune deletes the absent departments, makes the absent members former members, and says which", async () => {
    const summary = await importDirectory(database, acmeWithoutSales, { prune: true });
    expect(summary).toStrictEqual({
      enterprise_id: "acme", departments: 4, members: 1,
      removed_departments: [{ department_id: "120", full_path: "Acme Corp/Sales" }, { department_id: "121", full_path: "Acme Corp/Sales/Sales Engineering" }],
      removed_members: [{ user_id: "7002", email: "Han.Meimei@acme.example" }],
      restored_members: [],
      dry_run: false,
    });
    expect(await departmentIds()).toStrictEqual(["100", "110", "111", "112"]);
    expect(await members()).toStrictEqual([
      { user_id: "7001", email: "li.lei@acme.example", former: false },
      { user_id: "7002", email: "Han.Meimei@acme.example", former: true },
    ]);
    expect(await placements()).toStrictEqual(["7001@111"]);
    // The other enterprise is untouched.
    expect(await departmentIds("globex")).toStrictEqual(["900", "910"]);
    expect((await members("globex")).map((m) => m.former)).toStrictEqual([false]);
  });

  it("a former member is still found by user_id (marked), no longer by e-mail; its e-mail is free for another member", async () => {
    await importDirectory(database, acmeWithoutSales, { prune: true });
    const [byId] = await usage.membersByUserIds("acme", ["7002"]);
    expect(byId).toMatchObject({ user_id: "7002", email: "Han.Meimei@acme.example" });
    expect(byId!.removed_at).not.toBeNull();
    expect(await usage.membersByFoldedEmails("acme", ["han.meimei@acme.example"])).toStrictEqual([]);

    const newcomer = { user_id: "7003", email: "han.meimei@ACME.example", account_type: 1 as const, department_ids: ["110"] };
    await importDirectory(database, { ...acmeWithoutSales, members: [...acmeWithoutSales.members, newcomer] }, { prune: true });
    expect((await usage.membersByFoldedEmails("acme", ["han.meimei@acme.example"])).map((m) => m.user_id)).toStrictEqual(["7003"]);
  });

  it("a member who moves to a new root with the tree replaced keeps only the departments the file names", async () => {
    const replaced: DirectoryFile = {
      ...acme,
      departments: [{ department_id: "200", parent_department_id: "0", name: "Acme Group" }, { department_id: "210", parent_department_id: "200", name: "Labs" }],
      members: [{ ...acme.members[0]!, department_ids: ["210"] }],
    };
    const summary = await importDirectory(database, replaced, { prune: true });
    expect(summary.removed_departments.map((d) => d.department_id)).toStrictEqual(["100", "110", "111", "112", "120", "121"]);
    expect(await departmentIds()).toStrictEqual(["200", "210"]);
    expect(await placements()).toStrictEqual(["7001@210"]);
    expect((await departments.findByIds("acme", [], true)).map((d) => d.department_id)).toStrictEqual(["200"]);
  });

  it("--prune with a parent that only the store has is an error, and nothing changes", async () => {
    const orphan: DirectoryFile = { ...acme, departments: [acme.departments[0]!, { department_id: "111", parent_department_id: "110", name: "Platform" }], members: [] };
    await expect(importDirectory(database, orphan, { prune: true })).rejects.toThrow('department 111: parent_department_id "110" does not exist');
    expect(await departmentIds()).toStrictEqual(["100", "110", "111", "112", "120", "121"]);
    expect((await members()).map((m) => m.former)).toStrictEqual([false, false]);
  });

  it("--dry-run (with or without --prune) reports the same summary and writes nothing", async () => {
    const before = { departments: await departmentIds(), members: await members(), placements: await placements() };
    const renamed: DirectoryFile = { ...acmeWithoutSales, enterprise: { ...acme.enterprise, name: "Renamed" } };
    const dry = await importDirectory(database, renamed, { prune: true, dryRun: true });
    expect(dry).toMatchObject({ dry_run: true, removed_members: [{ user_id: "7002" }] });
    expect(dry.removed_departments.map((d) => d.department_id)).toStrictEqual(["120", "121"]);
    expect(await importDirectory(database, renamed, { dryRun: true })).toMatchObject({ dry_run: true, removed_members: [], removed_departments: [] });
    expect({ departments: await departmentIds(), members: await members(), placements: await placements() }).toStrictEqual(before);
    const enterprise = await database.db.selectFrom("enterprise").select("name").where("enterprise_id", "=", "acme").executeTakeFirstOrThrow();
    expect(enterprise.name).toBe("Acme Corp");
    expect({ ...(await importDirectory(database, renamed, { prune: true })), dry_run: true }).toStrictEqual(dry);
  });

  it("a former member named by a later file is restored: same member, current again, in the file's departments", async () => {
    await importDirectory(database, acmeWithoutSales, { prune: true });
    const [removed] = await usage.membersByUserIds("acme", ["7002"]);
    const summary = await importDirectory(database, { ...acme, members: [{ ...acme.members[1]!, department_ids: ["110"] }] });
    expect(summary.restored_members).toStrictEqual([{ user_id: "7002", email: "Han.Meimei@acme.example" }]);
    const [restored] = await usage.membersByUserIds("acme", ["7002"]);
    expect(restored).toMatchObject({ member_key: removed!.member_key, removed_at: null });
    expect((await usage.membersByFoldedEmails("acme", ["han.meimei@acme.example"])).map((m) => m.user_id)).toStrictEqual(["7002"]);
    expect(await placements()).toStrictEqual(["7001@111", "7002@110"]);
  });

  it("a file giving a member the e-mail of a current member it does not name is refused, naming both, and nothing changes", async () => {
    const taken = { ...acme, members: [{ user_id: "7003", email: "HAN.meimei@acme.example", account_type: 1 as const, department_ids: [] }] };
    await expect(importDirectory(database, taken)).rejects.toThrow(
      'members[0].email: "HAN.meimei@acme.example" is the e-mail of member "7002", which this file does not name ' +
      "(name that member with another e-mail, or import with --prune to make it a former member)");
    expect(await members()).toStrictEqual([
      { user_id: "7001", email: "li.lei@acme.example", former: false }, { user_id: "7002", email: "Han.Meimei@acme.example", former: false }]);
  });

  it("two members of the file may swap e-mails", async () => {
    const [lee, han] = acme.members as [DirectoryFile["members"][number], DirectoryFile["members"][number]];
    await importDirectory(database, { ...acme, members: [{ ...lee, email: han.email }, { ...han, email: lee.email }] });
    expect((await members()).map((m) => [m.user_id, m.email])).toStrictEqual([["7001", han.email], ["7002", lee.email]]);
  });

  it("a former member restored with an e-mail another member has taken since is refused, and stays a former member", async () => {
    await importDirectory(database, acmeWithoutSales, { prune: true });
    const successor = { user_id: "7003", email: "han.meimei@acme.example", account_type: 1 as const, department_ids: [] };
    await importDirectory(database, { ...acme, departments: [], members: [successor] });
    await expect(importDirectory(database, { ...acme, members: [acme.members[1]!] })).rejects.toThrow(
      'members[0].email: "Han.Meimei@acme.example" is the e-mail of member "7003", which this file does not name');
    expect((await members()).map((m) => `${m.user_id}${m.former ? " (former)" : ""}`)).toStrictEqual(["7001", "7002 (former)", "7003"]);
  });

  it("pruning again removes nothing more: a former member is not removed twice", async () => {
    await importDirectory(database, acmeWithoutSales, { prune: true });
    const again = await importDirectory(database, acmeWithoutSales, { prune: true });
    expect(again).toMatchObject({ removed_departments: [], removed_members: [], restored_members: [] });
  });
});
