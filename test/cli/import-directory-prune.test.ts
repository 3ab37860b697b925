// The CLI: `import directory FILE --prune` prints what it removes and removes it; `--dry-run`, with
// or without --prune, prints the same and writes nothing. (The cases of the import itself are in
// test/storage/directory-prune.test.ts.)
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DirectoryFile } from "../../src/domain/directory-file.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { migrateToLatest, openDatabase, type Database } from "../../src/storage/database.js";
import { cli } from "../helpers/cli.js";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/databases.js";
import { acme } from "../helpers/fixtures.js";
import { scratchFolder } from "../helpers/scratch-folder.js";

const acmeWithoutSales: DirectoryFile = {
  ...acme,
  departments: acme.departments.filter((d) => !["120", "121"].includes(d.department_id)),
  members: acme.members.filter((m) => m.user_id !== "7002"),
};
const REMOVALS = {
  removed_departments: [{ department_id: "120", full_path: "Acme Corp/Sales" }, { department_id: "121", full_path: "Acme Corp/Sales/Sales Engineering" }],
  removed_members: [{ user_id: "7002", email: "Han.Meimei@acme.example" }],
};

describe.each(dialects)("import directory --prune / --dry-run on %s", (dialect) => {
  let testDb: TestDatabase;
  let database: Database;
  const dir = scratchFolder("eadmin-prune-");
  const file = (name: string, content: DirectoryFile) => {
    const path = join(dir, name);
    writeFileSync(path, JSON.stringify(content));
    return path;
  };
  const importFile = (path: string, ...flags: string[]) => cli(["import", "directory", path, ...flags, "--db", testDb.url]);
  const state = async () => ({
    departments: (await database.db.selectFrom("department").select("department_id").where("enterprise_id", "=", "acme").orderBy("department_id").execute())
      .map((d) => d.department_id),
    former: (await database.db.selectFrom("member").select("user_id").where("enterprise_id", "=", "acme").where("removed_at", "is not", null).execute())
      .map((m) => m.user_id),
  });

  beforeAll(async () => {
    testDb = await createTestDatabase(dialect);
    database = openDatabase(testDb.url);
    await migrateToLatest(database);
    await importDirectory(database, acme);
  });
  afterAll(async () => {
    await database.close();
    await testDb.drop();
  });

  it("--dry-run, with or without --prune, prints what would change and writes nothing", async () => {
    const path = file("without-sales.json", acmeWithoutSales);
    const pruning = await importFile(path, "--prune", "--dry-run");
    expect(pruning.code).toBe(0);
    expect(JSON.parse(pruning.stdout)).toStrictEqual({ enterprise_id: "acme", departments: 4, members: 1, ...REMOVALS, restored_members: [], dry_run: true });
    const plain = await importFile(path, "--dry-run");
    expect(JSON.parse(plain.stdout)).toStrictEqual({
      enterprise_id: "acme", departments: 4, members: 1, removed_departments: [], removed_members: [], restored_members: [], dry_run: true,
    });
    expect(await state()).toStrictEqual({ departments: ["100", "110", "111", "112", "120", "121"], former: [] });
  });

  it("a member given the e-mail of a current member the file does not name: one line naming both, exit 2, nothing written", async () => {
    const path = file("taken-email.json", { ...acme, members: [{ user_id: "7003", email: "li.lei@ACME.example", account_type: 1, department_ids: [] }] });
    const run = await importFile(path);
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.stderr).toContain('members[0].email: "li.lei@ACME.example" is the e-mail of member "7001", which this file does not name');
    expect(await database.db.selectFrom("member").select("user_id").where("user_id", "=", "7003").execute()).toStrictEqual([]);
  });

  it("with --prune, a member of the file takes the e-mail of the member it prunes, in one import (dry run first)", async () => {
    const takeover = file("takeover.json", { ...acme, members: [{ user_id: "7003", email: "li.lei@ACME.example", account_type: 1, department_ids: [] }] });
    const dry = await importFile(takeover, "--prune", "--dry-run");
    expect(dry.stderr).toBe("");
    expect(JSON.parse(dry.stdout)).toMatchObject({ members: 1, removed_members: [{ user_id: "7001" }, { user_id: "7002" }], dry_run: true });
    expect(await state()).toStrictEqual({ departments: ["100", "110", "111", "112", "120", "121"], former: [] });
  });

  it("--prune prints what it removed and removes it; the full file later restores the former member", async () => {
    const pruned = await importFile(file("without-sales.json", acmeWithoutSales), "--prune");
    expect(pruned.code).toBe(0);
    expect(JSON.parse(pruned.stdout)).toStrictEqual({ enterprise_id: "acme", departments: 4, members: 1, ...REMOVALS, restored_members: [], dry_run: false });
    expect(await state()).toStrictEqual({ departments: ["100", "110", "111", "112"], former: ["7002"] });

    const restored = await importDirectory(database, acme);
    expect(restored).toMatchObject({ removed_members: [], restored_members: [{ user_id: "7002", email: "Han.Meimei@acme.example" }] });
    expect(await state()).toStrictEqual({ departments: ["100", "110", "111", "112", "120", "121"], former: [] });
  });
});
