import type { ChildProcess } from "node:child_process";
import { createServer, type AddressInfo } from "node:net";
import { createHash, randomBytes } from "node:crypto";
import { appendFileSync, chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import SqliteDatabase from "better-sqlite3";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashCredential } from "../../src/domain/credentials.js";
import { loadLocalKeyProvider } from "../../src/keys/local-key-provider.js";
import { EnvironmentConfigs } from "../../src/operations/environment-configs.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { migrateToLatest, openDatabase, type Database } from "../../src/storage/database.js";
import { EnvironmentConfigRepository } from "../../src/storage/environment-config-repository.js";
import { migrations } from "../../src/storage/migrations/index.js";
import { canRunAsNobody, cli, cliAsNobody, cliChild, cliOnTerminal, cliProcess } from "../helpers/cli.js";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/databases.js";
import { acme } from "../helpers/fixtures.js";
import { holdWriteLock } from "../helpers/write-lock.js";
import { scratchFolder } from "../helpers/scratch-folder.js";

// The commands run in this process (test/helpers/cli.ts); the tests of what only a process shows (its
// exit status, a terminal) run the real binary.

describe.each(dialects)("enterprise-admin CLI on %s", (dialect) => {
  let testDb: TestDatabase;
  let database: Database;
  const dir = scratchFolder("eadmin-cli-");
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

  /** A fresh database whose migration table records `names`, as the migrator would have. */
  async function recording(names: string[]): Promise<TestDatabase> {
    const other = await createTestDatabase(dialect);
    const opened = openDatabase(other.url);
    try {
      await sql`create table kysely_migration (name varchar(255) not null primary key, timestamp varchar(255) not null)`.execute(opened.db);
      for (const name of names) await sql`insert into kysely_migration (name, timestamp) values (${name}, ${new Date(0).toISOString()})`.execute(opened.db);
    } finally {
      await opened.close();
    }
    return other;
  }

  it("migrate refuses a database made by a pre-release schema in one line: recreate it, then import again", async () => {
    const old = await recording(["20261123T070000-create-directory", "20261123T070100-create-auth"]);
    try {
      const result = await cli(["migrate", "--db", old.url]);
      expect(result.code).not.toBe(0);
      expect(result.stdout).toBe("");
      expect(result.stderr.trimEnd().split("\n")).toStrictEqual([expect.stringMatching(
        /^error: database .+ was made by a pre-release schema \(migration 20261123T070000-create-directory\) and must be recreated: run migrate on a new SQLite file or PostgreSQL database, then import directory and import usage into it again$/)]);
    } finally {
      await old.drop();
    }
  });

  it("migrate refuses a database migrated by a newer version, naming its migration", async () => {
    const newer = await recording([...Object.keys(migrations), "20991231T000000-later"]);
    try {
      const result = await cli(["migrate", "--db", newer.url]);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(/^error: database .+ was migrated by a newer version of enterprise-admin \(migration 20991231T000000-later\): use that version\n$/);
    } finally {
      await newer.drop();
    }
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

  it("import directory refuses a tree deeper than 100 levels naming the department, and a cycle of 10,000 naming it (no stack overflow); applies nothing", async () => {
    const chain = (n: number, top: string) => Array.from({ length: n }, (_, i) => ({ department_id: `c${i}`, parent_department_id: i === 0 ? top : `c${i - 1}`, name: `C${i}` }));
    const enterprise = { enterprise_id: "deep", name: "Deep", currency: "USD" };
    // Leaf first: each department's parent comes later in the file.
    const deep = file("deep.json", JSON.stringify({ enterprise, departments: chain(10_000, "0").reverse(), members: [] }));
    const refused = await cli(["import", "directory", deep, "--db", testDb.url]);
    expect([refused.code, refused.stderr]).toStrictEqual([2, "error: department c100: 101 levels from the root down; a tree has at most 100\n"]);
    const cycle = chain(10_000, "c9999");
    const looped = await cli(["import", "directory", file("cycle.json", JSON.stringify({ enterprise, departments: [{ department_id: "r", parent_department_id: "0", name: "R" }, ...cycle], members: [] })), "--db", testDb.url]);
    expect(looped.code).toBe(2);
    expect(looped.stderr).toBe("error: departments: cycle through c0 -> c9999 -> c9998 -> c9997 -> c9996 -> … 9,993 more … -> c2 -> c1 -> c0\n");
    expect(await database.db.selectFrom("department").selectAll().where("enterprise_id", "=", "deep").execute()).toEqual([]);
    const fits = await cli(["import", "directory", file("fits.json", JSON.stringify({ enterprise, departments: chain(100, "0"), members: [] })), "--db", testDb.url]);
    expect(fits.code, fits.stderr).toBe(0);
    expect((await database.db.selectFrom("department").select("depth").where("department_id", "=", "c99").executeTakeFirstOrThrow()).depth).toBe(99);
  });

  it("import directory writes 500 members each in 45 departments (22,500 placements, past any statement's parameters)", async () => {
    const departments = [{ department_id: "root", parent_department_id: "0", name: "Root" },
      ...Array.from({ length: 45 }, (_, i) => ({ department_id: `d${i}`, parent_department_id: "root", name: `D${i}` }))];
    const members = Array.from({ length: 500 }, (_, i) => ({ user_id: `u${i}`, email: `u${i}@example.com`, account_type: 1, department_ids: departments.slice(1).map((d) => d.department_id) }));
    const result = await cli(["import", "directory", file("placed.json", JSON.stringify({ enterprise: { enterprise_id: "placed", name: "Placed", currency: "USD" }, departments, members })), "--db", testDb.url]);
    expect(result.code, result.stderr).toBe(0);
    const { n } = await database.db.selectFrom("member_department").select((eb) => eb.fn.countAll<string>().as("n")).where("enterprise_id", "=", "placed").executeTakeFirstOrThrow();
    expect(Number(n)).toBe(22_500);
  });

  it("import directory refuses bytes that are not UTF-8, U+0000 and lone surrogates, naming the field; applies nothing", async () => {
    const enterprise = { enterprise_id: "latin", name: "Latin", currency: "USD" };
    const withName = (name: string) => JSON.stringify({ enterprise, departments: [{ department_id: "r", parent_department_id: "0", name }], members: [] });
    const latin1 = join(dir, "latin1.json");
    writeFileSync(latin1, Buffer.from(withName("\u00c4rger"), "latin1")); // Ä as the single byte 0xC4
    for (const path of [latin1, file("nul.json", withName("a\u0000b")), file("surrogate.json", withName("a\ud800b"))]) {
      const result = await cli(["import", "directory", path, "--db", testDb.url]);
      expect([result.code, result.stderr]).toStrictEqual([2, expect.stringContaining("departments[0].name: must not contain U+0000, a lone surrogate or bytes that are not UTF-8")]);
    }
    expect(await database.db.selectFrom("enterprise").selectAll().where("enterprise_id", "=", "latin").execute()).toEqual([]);
  });

  it("import directory refuses a key given twice and names that hide or reorder characters, naming the field; applies nothing", async () => {
    const enterprise = { enterprise_id: "hidden", name: "Hidden", currency: "USD" };
    const withName = (name: string) => JSON.stringify({ enterprise, departments: [{ department_id: "r", parent_department_id: "0", name }], members: [] });
    const twice = '{"enterprise":{"enterprise_id":"hidden","name":"Hidden","currency":"USD"},"departments":[{"department_id":"r","parent_department_id":"0",' +
      '"name":"Beta","name":"Gamma"}],"members":[]}';
    const refusals: Array<[string, string]> = [
      [twice, "error: departments[0].name: given twice; send it once\n"],
      [withName("Bell\u0007"), "error: departments[0].name: must not contain control characters (U+0000 to U+001F, U+007F to U+009F)\n"],
      [withName("Admin\u202egnp.exe"), expect.stringMatching(/^error: departments\[0\]\.name: must not contain invisible or text-direction characters/) as unknown as string],
      [withName("Sal\u200bes"), expect.stringMatching(/^error: departments\[0\]\.name: must not contain invisible or text-direction characters/) as unknown as string],
      [withName("   "), "error: departments[0].name: must not begin or end with white space\n"],
      [JSON.stringify({ enterprise: { ...enterprise, name: "Hidden\u200e" }, departments: [], members: [] }),
        expect.stringMatching(/^error: enterprise\.name: must not contain invisible or text-direction characters/) as unknown as string],
    ];
    for (const [text, stderr] of refusals) {
      const result = await cli(["import", "directory", file("hidden.json", text), "--db", testDb.url]);
      expect([result.code, result.stderr], text).toStrictEqual([2, stderr]);
    }
    expect(await database.db.selectFrom("enterprise").selectAll().where("enterprise_id", "=", "hidden").execute()).toEqual([]);
    const joined = await cli(["import", "directory", file("joined.json", withName("Sales/East \u{1F469}\u200d\u{1F4BB}")), "--db", testDb.url]);
    expect([joined.code, joined.stderr]).toStrictEqual([0, ""]);
  });

  it("import directory reads a file that begins with a byte order mark", async () => {
    const result = await cli(["import", "directory", file("bom.json", `\uFEFF${JSON.stringify(acme)}`), "--dry-run", "--db", testDb.url]);
    expect(result.stderr).toBe("");
    expect(JSON.parse(result.stdout)).toMatchObject({ enterprise_id: "acme", members: 2, dry_run: true });
  });

  it("import directory upserts and is idempotent", async () => {
    const path = file("acme.json", JSON.stringify(acme));
    expect(JSON.parse((await cli(["import", "directory", path, "--db", testDb.url])).stdout))
      .toEqual({ enterprise_id: "acme", departments: 6, members: 2, removed_departments: [], removed_members: [], restored_members: [], dry_run: false });
    await cli(["import", "directory", path, "--db", testDb.url]);
    const rows = await database.db.selectFrom("department").select("department_id").where("enterprise_id", "=", "acme").execute();
    expect(rows).toHaveLength(6);
  });

  it("import directory takes internationalized e-mail addresses; one that is no address is refused naming the member", async () => {
    const directory = (emails: string[]) => file("intl.json", JSON.stringify({
      enterprise: { enterprise_id: "intl", name: "Intl", currency: "USD" },
      members: emails.map((email, i) => ({ user_id: String(i + 1), email, account_type: 1 })),
    }));
    const accepted = await cli(["import", "directory", directory(["élodie@x.example", "用户@例子.广告", "x@münchen.de", "li.lei@acme.example"]),
      "--dry-run", "--db", testDb.url]);
    expect(accepted.stderr).toBe("");
    expect(JSON.parse(accepted.stdout)).toMatchObject({ enterprise_id: "intl", members: 4, dry_run: true });
    // Lengths count characters, as the API's do: 128 emoji (256 UTF-16 units) make a user_id, 129 do not.
    const ids = (userId: string) => file("ids.json", JSON.stringify({
      enterprise: { enterprise_id: "intl", name: "Intl", currency: "USD" }, members: [{ user_id: userId, email: "e@x.example", account_type: 1 }],
    }));
    expect((await cli(["import", "directory", ids("😀".repeat(128)), "--dry-run", "--db", testDb.url])).code).toBe(0);
    expect((await cli(["import", "directory", ids("😀".repeat(129)), "--dry-run", "--db", testDb.url])).stderr)
      .toContain("members[0].user_id: longer than 128 characters");
    for (const [email, index] of [["li lei@acme.example", 0], ["@acme.example", 0], ["li.lei@", 0], ["li\u0001lei@acme.example", 0]] as const) {
      const refused = await cli(["import", "directory", directory([email]), "--dry-run", "--db", testDb.url]);
      expect(refused.code, email).toBe(2);
      expect(refused.stderr).toContain(`members[${index}].email: not an e-mail address`);
    }
  });

  describe("import usage", () => {
    const ev = (id: string, fields: Record<string, unknown> = {}) => JSON.stringify({
      event_id: id, user_id: "7001", model_name: "gpt-x", model_type: "Chat", model_source: "Builtin",
      timestamp: 1_730_073_600 + 3600, input_tokens: 100, output_tokens: 20, basic_amount: "0.5", pay_go_amount: "0.000001", ...fields,
    });
    const stored = async () => (await database.db.selectFrom("usage_event").select(["event_id", "input_tokens"]).where("enterprise_id", "=", "acme")
      .orderBy("event_id").execute()).map((r) => `${r.event_id}:${r.input_tokens}`);
    const importUsage = (path: string) => cli(["import", "usage", path, "--enterprise", "acme", "--db", testDb.url]);
    /**
     * Changes the file of a running import while the import waits for the store's write lock between two chunks, given the events
     * (event_ids starting `prefix`) committed then; returns their count. Once its first chunk has committed, its check is over; the lock,
     * taken then, keeps it from reading on past a batch, however late this process gets to run.
     */
    const whileImportWaits = async (child: ChildProcess, prefix: string, change: (committed: number) => void) => {
      const committed = async () => Number((await database.db.selectFrom("usage_event").select((eb) => eb.fn.countAll<number>().as("n"))
        .where("event_id", "like", `${prefix}%`).executeTakeFirstOrThrow()).n);
      for (let tries = 0; tries < 600 && (await committed()) === 0; tries++) await new Promise((resolve) => setTimeout(resolve, 50));
      const release = await holdWriteLock(dialect, testDb.url);
      try {
        expect(child.exitCode, "the import was still writing").toBe(null);
        change(await committed());
      } finally {
        await release();
      }
      return committed;
    };

    it("imports a file (blank lines and CRLF allowed); a second import records nothing again", async () => {
      const path = file("usage.ndjson", [ev("u-1"), "", ev("u-2", { user_id: 7002, input_tokens: 5 }) + "\r", ev("u-1", { input_tokens: 999 }), ev("u-3")].join("\n"));
      const first = await importUsage(path);
      expect(first.stderr).toBe("");
      expect(JSON.parse(first.stdout)).toEqual({ enterprise_id: "acme", lines: 5, recorded: 3, duplicates: 1 });
      expect(await stored()).toEqual(["u-1:100", "u-2:5", "u-3:100"]);
      expect(JSON.parse((await importUsage(path)).stdout)).toEqual({ enterprise_id: "acme", lines: 5, recorded: 0, duplicates: 4 });
      expect(await stored()).toEqual(["u-1:100", "u-2:5", "u-3:100"]);
    });

    it.runIf(dialect === "postgres")("on PostgreSQL, leaves the tables it wrote vacuumed and analyzed", async () => {
      const vacuumed = async () => (await sql<{ relname: string; vacuums: string; analyzes: string }>`select relname,
          vacuum_count + autovacuum_count as vacuums, analyze_count + autoanalyze_count as analyzes from pg_stat_user_tables
          where relname in ('usage_event', 'usage_running_total', 'usage_rollup', 'usage_rollup_members') order by relname`.execute(database.db)).rows
        .map((r) => ({ table: r.relname, vacuums: Number(r.vacuums), analyzes: Number(r.analyzes) }));
      const before = await vacuumed();
      const result = await importUsage(file("vacuum.ndjson", [ev("v-1"), ev("v-2", { user_id: "7002" })].join("\n")));
      expect(JSON.parse(result.stdout)).toMatchObject({ recorded: 2 });
      const after = await vacuumed();
      expect(after.map((t) => t.table)).toEqual(["usage_event", "usage_rollup", "usage_rollup_members", "usage_running_total"]);
      after.forEach((table, i) => {
        expect(table.vacuums).toBeGreaterThan(before[i]!.vacuums);
        expect(table.analyzes).toBeGreaterThan(before[i]!.analyzes);
      });
    });

    it("a file cut short while it is imported is refused saying so, exit 2; the chunks before stay", async () => {
      const count = 150_000;
      const lines = Array.from({ length: count }, (_, i) => ev(`s-${i}`));
      const path = file("shrinking.ndjson", lines.join("\n") + "\n");
      // Chunks and batches of 1,000 events: the reader runs at most 64 batches and its 1 MB buffer (about 5,000 lines) ahead of the commits.
      const child = cliChild(["import", "usage", path, "--enterprise", "acme", "--db", testDb.url], { IMPORT_CHUNK_EVENTS: "1000" });
      let stderr = "";
      child.stderr!.on("data", (chunk) => (stderr += chunk));
      const exited = new Promise<number | null>((resolve) => child.once("close", resolve));
      let cutAtLine = 0;
      const committed = await whileImportWaits(child, "s-", (before) => {
        // Mid-line, past where the reader can be.
        cutAtLine = before + 80_000;
        expect(cutAtLine, "the import was still early in the file").toBeLessThan(count);
        truncateSync(path, Buffer.byteLength(lines.slice(0, cutAtLine - 1).join("\n") + "\n") + 7);
      });
      expect(await exited).toBe(2);
      expect(stderr).toMatch(new RegExp(`^error: ${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} changed while it was imported, after its check: line ${cutAtLine}\\D`));
      const kept = await committed();
      expect(kept, "the chunks before the one with the cut line").toBe(Math.floor((cutAtLine - 1) / 1000) * 1000);
    }, 120_000);

    it("an empty file imports nothing, exit 0", async () => {
      expect(await importUsage(file("empty.ndjson", ""))).toStrictEqual({ code: 0, stdout: '{"enterprise_id":"acme","lines":0,"recorded":0,"duplicates":0}\n', stderr: "" });
    });

    it("imports the file as checked: a line appended during the writing is not part of it (it failed on a TypeError)", async () => {
      const count = 150_000;
      const path = file("growing.ndjson", Array.from({ length: count }, (_, i) => ev(`g-${i}`)).join("\n") + "\n");
      const child = cliChild(["import", "usage", path, "--enterprise", "acme", "--db", testDb.url], { IMPORT_CHUNK_EVENTS: "10000" });
      let stdout = "";
      let stderr = "";
      child.stdout!.on("data", (chunk) => (stdout += chunk));
      child.stderr!.on("data", (chunk) => (stderr += chunk));
      const exited = new Promise<number | null>((resolve) => child.once("close", resolve));
      // A line for another member (7002, not in the file) goes on the end.
      const growing = await whileImportWaits(child, "g-", () => appendFileSync(path, `${ev("g-late", { user_id: "7002" })}\n`));
      expect([await exited, stderr]).toStrictEqual([0, ""]);
      expect(JSON.parse(stdout)).toEqual({ enterprise_id: "acme", lines: count, recorded: count, duplicates: 0 });
      expect(await growing()).toBe(count);
    }, 120_000);

    it.each([
      ["a negative token count", ev("b-2", { input_tokens: -1 }), 'line 2 (event_id "b-2"): input_tokens: must be >= 0 (got -1)'],
      ["non-numeric tokens", ev("b-2", { output_tokens: "many" }), 'line 2 (event_id "b-2"): output_tokens: must be an integer (got "many")'],
      ["more than 6 decimals", ev("b-2", { pay_go_amount: "0.0000001" }), 'line 2 (event_id "b-2"): pay_go_amount: must be a decimal string >= 0 with at most 6 decimals (got "0.0000001")'],
      ["a bad model_source", ev("b-2", { model_source: "Other" }), 'line 2 (event_id "b-2"): model_source: must be one of Builtin, Custom (got "Other")'],
      ["an amount on a Custom model", ev("b-2", { model_source: "Custom" }), 'line 2 (event_id "b-2"): basic_amount: a Custom model\'s amounts must be zero'],
      ["an unknown member", ev("b-2", { user_id: "9999" }), 'line 2 (event_id "b-2"): user_id: "9999" is not a member of enterprise acme'],
      ["a line that is not JSON", '{"event_id": "b-2",', "line 2: not valid JSON (column 20: PropertyNameExpected)"],
      ["a user_id past 2^53 - 1 as a JSON number", ev("b-2", { user_id: 12345678901234567 }),
        'line 2 (event_id "b-2"): user_id: a number must be an integer from 0 to 9007199254740991 (2^53 - 1); send other ids as strings'],
      ["a timestamp in milliseconds", ev("b-2", { timestamp: 1_730_077_200_123 }),
        'line 2 (event_id "b-2"): timestamp: must be Unix seconds; 1730077200123 looks like milliseconds (1730077200 in seconds)'],
      // One second past the last accepted is no millisecond count (that would be 1978): its limit is named, no hint.
      ["a timestamp one second past 9999", ev("b-2", { timestamp: 253_402_300_800 }), 'line 2 (event_id "b-2"): timestamp: must be <= 253402300799 (got 253402300800)'],
    ])("rejects %s naming the line and the field, and records none of the file", async (_name, line, message) => {
      const before = await stored();
      const path = file("bad.ndjson", [ev("b-1"), line, ev("b-3")].join("\n"));
      const result = await importUsage(path);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain(message);
      expect(await stored()).toEqual(before);
    });
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

  it.each([["app"], ["token"]])("%s list of an unknown enterprise is one line and exit 2, not an empty list", async (noun) => {
    const result = await cli([noun, "list", "--enterprise", "nope", "--db", testDb.url]);
    expect(result).toStrictEqual({ code: 2, stdout: "", stderr: 'error: --enterprise: enterprise "nope" does not exist (import a directory file first)\n' });
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

  it("keys status lists each master key (current or retired) with its data keys; keys verify names each config it cannot read and exits 1, else 0", async () => {
    const keyFile = join(dir, "keys-test.key");
    const keyEnv = { ENTERPRISE_ADMIN_MASTER_KEY_FILE: keyFile, ENTERPRISE_ADMIN_MASTER_KEY: "" };
    const keysCli = (...args: string[]) => cli(["keys", ...args, "--db", testDb.url], keyEnv);
    const expectOk = async (...args: string[]) => {
      const result = await keysCli(...args);
      expect({ code: result.code, stderr: result.stderr }).toStrictEqual({ code: 0, stderr: "" });
      return JSON.parse(result.stdout);
    };
    await migrateToLatest(database);
    await importDirectory(database, acme);
    const keys = await loadLocalKeyProvider({ databaseUrl: testDb.url, env: keyEnv });
    const configs = new EnvironmentConfigs(new EnvironmentConfigRepository(database), keys);
    const a = (await configs.create("acme", { name: "keys-a", secrets: { K: "a" } })).row.id;
    const b = (await configs.create("acme", { name: "keys-b", secrets: { K: "b" } })).row.id;
    const first = keys.initialKeyId;

    expect(await expectOk("status")).toStrictEqual({
      key_source: `key file ${keyFile}`, current_master_key_id: first,
      keys: [{ id: first, state: "current", held: true, data_keys: 2 }],
    });
    expect(await expectOk("verify")).toStrictEqual({ ok: true, current_master_key_id: first, current_master_key_held: true, data_keys: 2, unwrapped: 2, unreadable: [] });

    // b's data key relabelled with a key that is not held: verify names b alone, status lists that key as retired, not held
    await database.db.updateTable("environment_data_key").set({ master_key_id: "local-000000000000" }).where("environment_id", "=", b).execute();
    const failed = await keysCli("verify");
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.stdout)).toStrictEqual({
      ok: false, current_master_key_id: first, current_master_key_held: true, data_keys: 2, unwrapped: 1,
      unreadable: [{ enterprise_id: "acme", environment_id: b, name: "keys-b", master_key_id: "local-000000000000", reason: `cannot unwrap: master key "local-000000000000" is not held (key file ${keyFile})` }],
    });
    expect(failed.stderr).toBe(`error: environment config "keys-b" (${b}) of enterprise "acme" cannot be read: cannot unwrap: master key "local-000000000000" is not held (key file ${keyFile})\n`);
    expect((await expectOk("status")).keys).toStrictEqual([
      { id: first, state: "current", held: true, data_keys: 1 },
      { id: "local-000000000000", state: "retired", held: false, data_keys: 1 },
    ]);
    expect((await keysCli("rotate")).code).not.toBe(0); // an unreadable data key stops a rotation before any change
    await database.db.updateTable("environment_data_key").set({ master_key_id: first }).where("environment_id", "=", b).execute();

    const rotated = await expectOk("rotate");
    // the key file's starting key is never removed (a database sharing the file may have started with it)
    expect(rotated).toStrictEqual({ master_key_id: expect.stringMatching(/^local-[0-9a-f]{12}$/), rewrapped_data_keys: 2, removed_master_key_ids: [] });
    expect((await expectOk("status")).keys).toStrictEqual([
      { id: rotated.master_key_id, state: "current", held: true, data_keys: 2 },
      { id: first, state: "retired", held: true, data_keys: 0 },
    ]);

    // the key file moved away: every command says so, naming the key the database's secrets are under, exits 1,
    // and creates no key file in its place (rotate and seed would have made a new key, which opens none of them)
    const saved = readFileSync(keyFile, "utf8");
    rmSync(keyFile);
    for (const command of ["status", "verify", "rotate"]) {
      const missing = await keysCli(command);
      expect({ code: missing.code, stdout: missing.stdout }).toStrictEqual({ code: 1, stdout: "" });
      expect(missing.stderr).toBe(`error: key file ${keyFile} does not exist, and this database's secrets are under master key "${rotated.master_key_id}", ` +
        "which a new key file would not open: restore the key file from a backup, or set ENTERPRISE_ADMIN_MASTER_KEY_FILE (or ENTERPRISE_ADMIN_MASTER_KEY) as the servers have it\n");
      expect(existsSync(keyFile)).toBe(false);
    }

    // the current key removed from the key file by hand: both configs named, and the current key reported missing
    const withoutCurrent = JSON.parse(saved) as { current: string; keys: { id: string }[] };
    writeFileSync(keyFile, JSON.stringify({ current: first, keys: withoutCurrent.keys.filter((k) => k.id !== rotated.master_key_id) }), { mode: 0o600 });
    const lost = await keysCli("verify");
    expect(lost.code).toBe(1);
    expect(JSON.parse(lost.stdout)).toMatchObject({ ok: false, current_master_key_id: rotated.master_key_id, current_master_key_held: false, unwrapped: 0 });
    expect(lost.stderr).toContain(`environment config "keys-a" (${a})`);
    expect(lost.stderr).toContain(`environment config "keys-b" (${b})`);
    expect(lost.stderr).toContain(`error: the current master key "${rotated.master_key_id}" is not held by this key source: new secrets would be refused`);
    writeFileSync(keyFile, saved, { mode: 0o600 });
    await expectOk("verify");
  });
});

describe("enterprise-admin CLI: output, errors and the demo, whatever the database", () => {
  const dir = scratchFolder("eadmin-cli-any-");
  const earlier = join(dir, "earlier", "demo.sqlite");
  const later = join(dir, "later", "demo.sqlite");

  /** The demo's events, one string each, by local date (the demo's days fall on one date in UTC and Asia/Shanghai). */
  async function demoEvents(url: string): Promise<Map<string, string>> {
    const opened = openDatabase(url);
    try {
      const rows = await opened.db.selectFrom("usage_event").select(["event_id", "ts", "input_tokens", "output_tokens", "basic_micros", "pay_go_micros"])
        .where("enterprise_id", "=", "demo").orderBy("event_id").execute();
      return new Map(rows.map((r) => [r.event_id, `${new Date(r.ts * 1000).toISOString()} ${r.input_tokens} ${r.output_tokens} ${r.basic_micros} ${r.pay_go_micros}`]));
    } finally {
      await opened.close();
    }
  }
  const datesOf = (events: Map<string, string>) => [...new Set([...events.values()].map((e) => e.slice(0, 10)))].sort();

  it("in this process, commander's own endings are exit codes: --version is 0, a usage error 1 with its message", async () => {
    const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
    expect(await cli(["--version"])).toStrictEqual({ code: 0, stdout: `${version}\n`, stderr: "" });
    const usage = await cli(["token", "list"]);
    expect([usage.code, usage.stdout]).toStrictEqual([1, ""]);
    expect(usage.stderr).toMatch(/^error: required option '--enterprise <id>' not specified\n\nUsage: enterprise-admin token list \[options\]\n/);
  });

  it("seed --demo makes the same days whatever --as-of: two seeds agree on their common days, and the --as-of day is included", async () => {
    const first = await cli(["seed", "--demo", "--as-of", "2026-03-10", "--json", "--db", earlier]);
    expect(first.code).toBe(0);
    expect(first.stderr).toContain(`created directory ${join(dir, "earlier")} for the database ${earlier}\n`);
    expect(JSON.parse(first.stdout)).toMatchObject({ enterprise_id: "demo", as_of: "2026-03-10", days: 90, access_token: expect.stringMatching(/^eat_/) });
    expect((await cli(["seed", "--demo", "--as-of", "2026-03-20", "--db", later])).stdout).toMatch(/^eat_[A-Za-z0-9_-]{43}\n$/);

    const a = await demoEvents(earlier);
    const b = await demoEvents(later);
    expect([datesOf(a)[0], datesOf(a).at(-1), datesOf(b)[0], datesOf(b).at(-1)]).toStrictEqual(["2025-12-11", "2026-03-10", "2025-12-21", "2026-03-20"]);
    const common = (events: Map<string, string>) => [...events].filter(([, e]) => e.slice(0, 10) >= "2025-12-21" && e.slice(0, 10) <= "2026-03-10");
    expect(common(a).length).toBeGreaterThan(1000);
    expect(common(b)).toStrictEqual(common(a));

    // Seeding the earlier store up to the later day adds exactly the days it lacked.
    const again = JSON.parse((await cli(["seed", "--demo", "--as-of", "2026-03-20", "--json", "--db", earlier])).stdout);
    expect(again.recorded).toBe([...b.values()].filter((e) => e.slice(0, 10) > "2026-03-10").length);
  }, 120_000);

  it("a result is JSON when piped or with --json, and a table with ISO 8601 times on a terminal", async () => {
    const piped = await cli(["token", "list", "--enterprise", "demo", "--db", earlier]);
    const tokens = JSON.parse(piped.stdout) as { token_id: string; expires_at: number }[];
    expect(tokens).toHaveLength(2); // one per seed of this store
    expect(piped.stdout.split("\n")).toHaveLength(2); // one line

    const asked = await cliOnTerminal(["token", "list", "--enterprise", "demo", "--json", "--db", earlier]);
    expect(JSON.parse(asked.stdout)).toStrictEqual(tokens);

    const table = await cliOnTerminal(["token", "list", "--enterprise", "demo", "--db", earlier]);
    expect(table.code).toBe(0);
    const iso = new Date(tokens[0]!.expires_at * 1000).toISOString().replace(".000Z", "Z");
    expect(table.stdout).toMatch(new RegExp(`│ ${tokens[0]!.token_id} +│ +│ departments:read, environments:read, environments:write, statistics:read, usage:write │ [0-9T:Z-]+ │ ${iso} │ false +│`));
    expect(table.stdout).toMatch(/│ token_id +│ app_id │ permissions +│ created_at +│ expires_at +│ revoked │/);
  }, 60_000);

  it("token create prints the token alone even on a terminal (its token_id on stderr), and an object with --json", async () => {
    // app create prints JSON on a terminal too (the contract's form): the secret, once, to copy or parse.
    const app = await cliOnTerminal(["app", "create", "--enterprise", "demo", "--scopes", "statistics:read", "--db", earlier]);
    for (const [name, problem] of [["", "must not be empty"], ["x".repeat(129), "longer than 128 characters"], [" padded", "must not begin or end with white space"],
      ["re\u202eports", "must not contain invisible or text-direction characters (Unicode's default-ignorable and bidi-control ones, line and paragraph separators; U+200C, U+200D and variation selectors may)"]]) {
      expect(await cli(["app", "create", "--enterprise", "demo", "--scopes", "statistics:read", "--name", name!, "--db", earlier]))
        .toStrictEqual({ code: 2, stdout: "", stderr: `error: name: ${problem}\n` });
    }
    expect(JSON.parse(app.stdout)).toMatchObject({ app_id: expect.stringMatching(/^app_/), app_secret: expect.any(String) });
    const onTerminal = await cliOnTerminal(["token", "create", "--enterprise", "demo", "--scopes", "statistics:read", "--db", earlier]);
    expect(onTerminal.stdout).toMatch(/^token_id: tok_[0-9a-f]{32}\r\neat_[A-Za-z0-9_-]{43}\r\n$/);
    const asked = await cli(["token", "create", "--enterprise", "demo", "--scopes", "statistics:read", "--json", "--db", earlier]);
    expect(JSON.parse(asked.stdout)).toStrictEqual({ access_token: expect.stringMatching(/^eat_/), token_id: expect.stringMatching(/^tok_/), expire: 7200 });
  });

  it("a file that is not there is one line naming it, exit 2", async () => {
    const missing = join(dir, "missing.ndjson");
    expect(await cli(["import", "usage", missing, "--enterprise", "demo", "--db", earlier]))
      .toStrictEqual({ code: 2, stdout: "", stderr: `error: ${missing}: no such file or directory\n` });
  });

  it("keys status, verify and merge on a SQLite file that is not there refuse it, exit 2, and make no store (a mistyped --db verified \"ok\")", async () => {
    const typo = join(dir, "enterprise-admin.sqlit");
    const keys = { ENTERPRISE_ADMIN_MASTER_KEY: randomBytes(32).toString("base64") };
    for (const args of [["keys", "verify"], ["keys", "status"]]) {
      expect(await cli([...args, "--db", typo], keys), args.join(" ")).toStrictEqual({ code: 2, stdout: "", stderr: `error: --db/DATABASE_URL: no database at ${typo}\n` });
    }
    const keyFile = join(dir, "typo-keys", "master.key");
    mkdirSync(dirname(keyFile), { recursive: true });
    writeFileSync(keyFile, JSON.stringify({ current: "k1", keys: [{ id: "k1", key: randomBytes(32).toString("base64") }] }), { mode: 0o600 });
    expect(await cli(["keys", "merge", keyFile, "--db", typo], { ENTERPRISE_ADMIN_MASTER_KEY_FILE: keyFile }))
      .toStrictEqual({ code: 2, stdout: "", stderr: `error: --db/DATABASE_URL: no database at ${typo}\n` });
    expect(existsSync(typo)).toBe(false);
  });

  it("a folder given as a file, an empty --out, and a --db that is no SQLite file nor postgres:// are one line naming them, exit 2", async () => {
    const folder = join(dir, "a-folder");
    mkdirSync(folder, { recursive: true });
    const refused = (stderr: string) => ({ code: 2, stdout: "", stderr: `error: ${stderr}\n` });
    expect(await cli(["import", "directory", folder, "--db", earlier])).toStrictEqual(refused(`${folder}: is a directory, not a file`));
    expect(await cli(["import", "usage", folder, "--enterprise", "demo", "--db", earlier])).toStrictEqual(refused(`${folder}: is a directory, not a file`));
    expect(await cli(["export", "usage", "--enterprise", "demo", "--from", "2026-11-16", "--to", "2026-11-16", "--out", "", "--db", earlier]))
      .toStrictEqual(refused("--out: an empty name is no file: name one, or leave --out out to write to stdout"));
    expect(readdirSync(process.cwd()).filter((name) => name.startsWith(".partial-"))).toStrictEqual([]);
    expect(await cli(["migrate", "--db", folder])).toStrictEqual(refused(`--db/DATABASE_URL: ${folder} cannot be opened as a SQLite file (a folder, or no permission)`));
    const text = join(dir, "notes.txt");
    writeFileSync(text, "not a database, just text that is long enough to fill a header of one hundred bytes or so. ".repeat(3));
    expect(await cli(["migrate", "--db", text])).toStrictEqual(refused(`--db/DATABASE_URL: ${text} is not a SQLite database`));
    // The password of the URL is never repeated, and nothing is made at ./mysql:
    expect(await cli(["migrate", "--db", "mysql://admin:hunter2@db.example/eadmin"]))
      .toStrictEqual(refused("--db/DATABASE_URL: a mysql:// URL is no database of this service's (a SQLite file path or file: URL, or postgres://)"));
    expect(existsSync("mysql:")).toBe(false);
  });

  it("a file: URL names its file in any case, relative ones from the working directory; one with a query is refused, exit 2", async () => {
    const relativeUrl = `file:${relative(process.cwd(), join(dir, "urls", "relative.sqlite"))}`;
    const upperUrl = `FILE:${join(dir, "urls", "upper.sqlite")}`;
    for (const url of [relativeUrl, upperUrl, pathToFileURL(join(dir, "urls", "absolute.sqlite")).href]) {
      expect((await cli(["migrate", "--db", url])).code, url).toBe(0);
    }
    expect(readdirSync(join(dir, "urls")).filter((name) => name.endsWith(".sqlite")).sort()).toStrictEqual(["absolute.sqlite", "relative.sqlite", "upper.sqlite"]);
    expect(await cli(["migrate", "--db", `${relativeUrl}?mode=ro`]))
      .toStrictEqual({ code: 2, stdout: "", stderr: "error: --db/DATABASE_URL: a file: URL takes no query or fragment (SQLite's URI options are not read)\n" });
  });

  it("without --db, a command uses the DATABASE_URL of its environment", async () => {
    const path = join(dir, "from-env", "admin.sqlite");
    const result = await cli(["migrate"], { DATABASE_URL: path });
    expect([result.code, result.stderr]).toStrictEqual([0, `created directory ${join(dir, "from-env")} for the database ${path}\n`]);
    expect(existsSync(path)).toBe(true);
  });

  it("migrate says which directories it created for a new SQLite file", async () => {
    const path = join(dir, "new", "sub", "admin.sqlite");
    const result = await cli(["migrate", "--db", path]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(`created directories ${join(dir, "new")}, ${join(dir, "new", "sub")} for the database ${path}\n`);
    expect(JSON.parse(result.stdout)).toStrictEqual({ applied: Object.keys(migrations) });
    expect((await cli(["migrate", "--db", path])).stderr).toBe(""); // nothing created the second time
  });
});

// Each test starts the real binary (bin/enterprise-admin.mjs) as a process: what its exit status is.
// They share nothing, so they run at once.
describe.concurrent("the real binary's exit status", () => {
  const dir = scratchFolder("eadmin-cli-bin-");

  it("--version prints the version of package.json and exits 0", async () => {
    const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
    expect(await cliProcess(["--version"])).toStrictEqual({ code: 0, stdout: `${version}\n`, stderr: "" });
  });

  it("a missing required option is commander's message and the help, exit 1", async () => {
    const result = await cliProcess(["token", "list", "--db", join(dir, "options.sqlite")]);
    expect([result.code, result.stdout]).toStrictEqual([1, ""]);
    expect(result.stderr).toMatch(/^error: required option '--enterprise <id>' not specified\n\nUsage: enterprise-admin token list \[options\]\n/);
  });

  it("a file that is not there is one line naming it, exit 2", async () => {
    const missing = join(dir, "missing.json");
    expect(await cliProcess(["import", "directory", missing, "--db", join(dir, "missing.sqlite")]))
      .toStrictEqual({ code: 2, stdout: "", stderr: `error: ${missing}: no such file or directory\n` });
  });

  it("a bad setting, as an option or an environment variable, is one line naming it, exit 2", async () => {
    expect(await cliProcess(["serve", "--port", "abc", "--db", join(dir, "settings.sqlite")]))
      .toStrictEqual({ code: 2, stdout: "", stderr: 'error: --port/PORT: "abc" is not a port number (0 to 65535)\n' });
    expect(await cliProcess(["token", "list", "--enterprise", "acme", "--db", join(dir, "settings.sqlite")], { SQLITE_CACHE_MIB: "abc" }))
      .toMatchObject({ code: 2, stdout: "", stderr: expect.stringMatching(/^error: SQLITE_CACHE_MIB: "abc" is not a whole number/) });
  });

  it("an empty --db, --host or --port is refused naming it, not taken for the default, exit 2", async () => {
    const db = join(dir, "settings.sqlite");
    for (const [flag, args] of [["--db", ["migrate", "--db", ""]], ["--host", ["serve", "--port", "0", "--host", "", "--db", db]], ["--port", ["serve", "--port", " ", "--db", db]]] as const) {
      expect(await cli([...args]), flag).toStrictEqual({ code: 2, stdout: "", stderr: `error: ${flag}: empty; give a value or leave the option out\n` });
    }
  });

  it("a --host that is no address of this machine stops serve, naming --host, not the database, exit 2", async () => {
    expect(await cliProcess(["serve", "--port", "0", "--host", "10.99.99.99", "--db", join(dir, "settings.sqlite")]))
      .toStrictEqual({ code: 2, stdout: "", stderr: 'error: --host/HOST: "10.99.99.99" is no address of this machine to listen on (EADDRNOTAVAIL)\n' });
  });

  it("serve and seed on a store whose key file is gone stop saying so, and make no new key file (it would open none of the store's secrets)", async () => {
    const db = join(dir, "keyless", "demo.sqlite");
    const keyFile = join(dir, "keyless", "master.key");
    expect((await cliProcess(["seed", "--demo", "--db", db])).code).toBe(0);
    const current = (JSON.parse(readFileSync(keyFile, "utf8")) as { current: string }).current;
    rmSync(keyFile);
    const refusal = `error: key file ${keyFile} does not exist, and this database's secrets are under master key "${current}", which a new key file ` +
      "would not open: restore the key file from a backup, or set ENTERPRISE_ADMIN_MASTER_KEY_FILE (or ENTERPRISE_ADMIN_MASTER_KEY) as the servers have it\n";
    expect(await cliProcess(["serve", "--port", "0", "--db", db])).toStrictEqual({ code: 1, stdout: "", stderr: refusal });
    // A seed of later days is refused before it writes any of them.
    const events = () => {
      const store = new SqliteDatabase(db, { readonly: true });
      try {
        return (store.prepare("select count(*) as n from usage_event").get() as { n: number }).n;
      } finally {
        store.close();
      }
    };
    const before = events();
    expect(await cliProcess(["seed", "--demo", "--as-of", "2099-06-30", "--db", db])).toMatchObject({ code: 1, stdout: "", stderr: refusal });
    expect(events()).toBe(before);
    expect(existsSync(keyFile)).toBe(false);
  }, 60_000);

  it.skipIf(!canRunAsNobody())("a store its user may not write stops a command at start naming the file, with or without its -wal and -shm files (SQLite opened it read-only and failed at the first write)", async () => {
    chmodSync(dir, 0o755); // nobody may look inside; the folder below and the store are root's, 0755 and 0644
    const db = join(dir, "root-only", "store.sqlite");
    expect((await cliProcess(["migrate", "--db", db])).code).toBe(0);
    const refusal = (code: string) => ({ code: 2, stdout: "", stderr: `error: --db/DATABASE_URL: ${db} cannot be written (${code}): SQLite writes the file and, beside it, ` +
      "its -wal and -shm files, which it creates in that folder; check the owner and permissions of all of them\n" });
    expect(await cliAsNobody(["token", "list", "--enterprise", "acme", "--db", db])).toStrictEqual(refusal("SQLITE_READONLY_DIRECTORY"));
    // A server of root's still has the store open: its -wal and -shm files are there, root's too.
    const open = new SqliteDatabase(db);
    try {
      open.pragma("journal_mode = WAL");
      open.prepare("select count(*) from enterprise").get();
      expect(await cliAsNobody(["token", "list", "--enterprise", "acme", "--db", db])).toStrictEqual(refusal("SQLITE_READONLY"));
    } finally {
      open.close();
    }
  });

  it("a --port another process holds stops serve saying so and naming --port, exit 1 (it may be free on the next start)", async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const port = (holder.address() as AddressInfo).port;
    try {
      expect(await cliProcess(["serve", "--port", String(port), "--db", join(dir, "settings.sqlite")])).toStrictEqual({ code: 1, stdout: "",
        stderr: `error: --port/PORT: 127.0.0.1 port ${port} is in use by another process: stop it, or choose another port (EADDRINUSE)\n` });
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });

  it("a LOG_LEVEL that is no level, a limit past 2^31 - 1, or a master key that is not base64 of 32 bytes, is one line naming it, exit 2", async () => {
    expect(await cli(["serve", "--port", "0", "--db", join(dir, "settings.sqlite")], { LOG_LEVEL: "verbose" }))
      .toStrictEqual({ code: 2, stdout: "", stderr: 'error: LOG_LEVEL: "verbose" is not a level (trace, debug, info, warn, error, fatal, silent)\n' });
    // Decimal digits alone: Number() would take these as 16, 1000 and 5.
    for (const [name, text] of [["REQUEST_TIMEOUT_MS", "0x10"], ["MAX_CONNECTIONS", "1e3"], ["SHUTDOWN_GRACE_MS", "+5"]]) {
      expect(await cli(["serve", "--port", "0", "--db", join(dir, "settings.sqlite")], { [name!]: text! }))
        .toStrictEqual({ code: 2, stdout: "", stderr: `error: ${name}: "${text}" is not a whole number from 1 to 2147483647\n` });
    }
    expect(await cli(["serve", "--port", "0x1F90", "--db", join(dir, "settings.sqlite")]))
      .toStrictEqual({ code: 2, stdout: "", stderr: 'error: --port/PORT: "0x1F90" is not a port number (0 to 65535)\n' });
    expect(await cli(["serve", "--port", "0", "--db", join(dir, "settings.sqlite")], { HTTP2_MAX_CONCURRENT_STREAMS: "4294967296" }))
      .toStrictEqual({ code: 2, stdout: "", stderr: 'error: HTTP2_MAX_CONCURRENT_STREAMS: "4294967296" is not a whole number from 1 to 2147483647\n' });
    const key = await cli(["keys", "status", "--db", join(dir, "settings.sqlite")], { ENTERPRISE_ADMIN_MASTER_KEY: "notbase64!!" });
    expect([key.code, key.stderr]).toStrictEqual([2, "error: ENTERPRISE_ADMIN_MASTER_KEY must be the base64 encoding of exactly 32 bytes (it is not valid base64)\n"]);
  });

  it("a report setting out of range stops serve, naming it, exit 2", async () => {
    expect(await cliProcess(["serve", "--port", "0", "--db", join(dir, "settings.sqlite")], { REPORT_MAX_FIGURES: "999" }))
      .toStrictEqual({ code: 2, stdout: "", stderr: 'error: REPORT_MAX_FIGURES: "999" is not a whole number >= 1000\n' });
    expect(await cliProcess(["serve", "--port", "0", "--db", join(dir, "settings.sqlite")], { REPORT_MAX_RUNNING: "0" }))
      .toStrictEqual({ code: 2, stdout: "", stderr: 'error: REPORT_MAX_RUNNING: "0" is not a whole number from 1 to 1000\n' });
  });

  it("a key file whose key bytes are not those of their local- id is refused, naming the id, never the key", async () => {
    const [named, swapped] = [randomBytes(32), randomBytes(32)];
    const id = `local-${createHash("sha256").update(named).digest("hex").slice(0, 12)}`;
    const keyFile = join(dir, "swapped.key");
    writeFileSync(keyFile, JSON.stringify({ current: id, keys: [{ id, key: swapped.toString("base64") }] }), { mode: 0o600 });
    expect((await cliProcess(["migrate", "--db", join(dir, "swapped.sqlite")])).code).toBe(0);
    const result = await cliProcess(["keys", "status", "--db", join(dir, "swapped.sqlite")], { ENTERPRISE_ADMIN_MASTER_KEY_FILE: keyFile });
    expect(result).toMatchObject({ code: 1, stdout: "" });
    expect(result.stderr).toBe(`error: key file ${keyFile}: master key "${id}" is not the key of that id (an id local-… is the first 12 hex digits ` +
      "of its key's SHA-256): the key was changed or damaged; restore the file from a backup\n");
    expect(result.stderr).not.toContain(swapped.toString("base64"));
  });

  it("an unreachable PostgreSQL is one line naming the server (no credentials), exit 1", async () => {
    const result = await cliProcess(["migrate", "--db", "postgres://admin:s3cret@127.0.0.1:1/admin"]);
    expect(result).toStrictEqual({
      code: 1, stdout: "", stderr: "error: cannot connect to the database postgres://127.0.0.1:1/admin: connection refused (is PostgreSQL running there?)\n",
    });
  });
});
