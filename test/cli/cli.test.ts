import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashCredential } from "../../src/domain/credentials.js";
import { openDatabase, type Database } from "../../src/storage/database.js";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/databases.js";
import { acme } from "../helpers/fixtures.js";

const run = promisify(execFile);
const bin = new URL("../../bin/enterprise-admin.mjs", import.meta.url).pathname;

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], { env: { ...process.env, DATABASE_URL: "" } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe.each(dialects)("enterprise-admin CLI on %s", (dialect) => {
  let testDb: TestDatabase;
  let database: Database;
  const dir = mkdtempSync(join(tmpdir(), "eadmin-cli-"));
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  beforeAll(async () => {
    testDb = await createTestDatabase(dialect);
    database = openDatabase(testDb.url);
  });
  afterAll(async () => {
    await database.close();
    await testDb.drop();
  });

  it("migrate applies the migrations once", async () => {
    const first = await cli(["migrate", "--db", testDb.url]);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout).applied.length).toBeGreaterThan(0);
    expect(JSON.parse((await cli(["migrate", "--db", testDb.url])).stdout)).toEqual({ applied: [] });
  });

  it("import directory reports a bad line and applies nothing", async () => {
    const bad = file("bad.json", '{\n  "enterprise": {"enterprise_id": "acme", "name": "Acme", "currency": "CNY"},\n  "departments": [,]\n}');
    const result = await cli(["import", "directory", bad, "--db", testDb.url]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/^error: not valid JSON: line 3, column \d+/);
    expect(await database.db.selectFrom("enterprise").selectAll().execute()).toEqual([]);
  });

  it("import directory rejects a second root by path and applies nothing", async () => {
    const twoRoots = { ...acme, departments: [...acme.departments, { department_id: "999", parent_department_id: "0", name: "Other" }] };
    const result = await cli(["import", "directory", file("roots.json", JSON.stringify(twoRoots)), "--db", testDb.url]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('exactly one department must have parent "0" (the root), found 2');
    expect(await database.db.selectFrom("department").selectAll().execute()).toEqual([]);
  });

  it("import directory upserts and is idempotent", async () => {
    const path = file("acme.json", JSON.stringify(acme));
    expect(JSON.parse((await cli(["import", "directory", path, "--db", testDb.url])).stdout))
      .toEqual({ enterprise_id: "acme", departments: 6, members: 2 });
    await cli(["import", "directory", path, "--db", testDb.url]);
    const rows = await database.db.selectFrom("department").select("department_id").where("enterprise_id", "=", "acme").execute();
    expect(rows).toHaveLength(6);
  });

  it("app create prints app_id and app_secret, stores only the secret's hash; list and revoke work", async () => {
    const created = await cli(["app", "create", "--enterprise", "acme", "--scopes", "departments:read,statistics:read", "--name", "reports", "--db", testDb.url]);
    expect(created.code).toBe(0);
    const app = JSON.parse(created.stdout);
    expect(app).toMatchObject({ enterprise_id: "acme", name: "reports", permissions: ["departments:read", "statistics:read"] });
    const stored = await database.db.selectFrom("app").selectAll().where("app_id", "=", app.app_id).executeTakeFirstOrThrow();
    expect(stored.secret_hash).toBe(hashCredential(app.app_secret));
    expect(JSON.stringify(stored)).not.toContain(app.app_secret);

    const listed = JSON.parse((await cli(["app", "list", "--enterprise", "acme", "--db", testDb.url])).stdout);
    expect(listed).toEqual([expect.objectContaining({ app_id: app.app_id, revoked: false })]);
    expect((await cli(["app", "revoke", app.app_id, "--db", testDb.url])).code).toBe(0);
    expect(JSON.parse((await cli(["app", "list", "--enterprise", "acme", "--db", testDb.url])).stdout)[0].revoked).toBe(true);
    expect((await cli(["app", "revoke", "app_unknown", "--db", testDb.url])).stderr).toContain('app "app_unknown" not found');
  });

  it("token create prints the token alone and rejects unknown scopes and durations", async () => {
    const made = await cli(["token", "create", "--enterprise", "acme", "--scopes", "departments:read", "--expires-in", "15m", "--db", testDb.url]);
    expect(made.stdout).toMatch(/^eat_[A-Za-z0-9_-]{43}\n$/);
    const row = await database.db.selectFrom("access_token").selectAll().where("token_hash", "=", hashCredential(made.stdout.trim())).executeTakeFirstOrThrow();
    expect(Number(row.expires_at) - Number(row.created_at)).toBe(900);
    const badScope = await cli(["token", "create", "--enterprise", "acme", "--scopes", "admin:all", "--db", testDb.url]);
    expect(badScope.code).toBe(2);
    expect(badScope.stderr).toContain('unknown permission "admin:all"');
    expect((await cli(["token", "create", "--enterprise", "acme", "--scopes", "departments:read", "--expires-in", "soon", "--db", testDb.url])).stderr)
      .toContain('--expires-in: "soon" is not a duration');
    expect((await cli(["token", "create", "--enterprise", "nobody", "--scopes", "departments:read", "--db", testDb.url])).stderr)
      .toContain('enterprise "nobody" does not exist');
  });
});
