// The real CLI: `usage rebuild --enterprise` makes an enterprise's running totals again from its raw
// events: byte for byte the rows that ingestion wrote, whatever was lost or damaged, and exact while
// ingestion goes on beside it.
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { checkUsageEvent } from "../../src/domain/usage-event.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { recordUsage } from "../../src/operations/record-usage.js";
import { migrateToLatest, openDatabase, type Database } from "../../src/storage/database.js";
import { UsageRepository } from "../../src/storage/usage-repository.js";
import { cli } from "../helpers/cli.js";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/databases.js";
import { acme, globex } from "../helpers/fixtures.js";

vi.setConfig({ testTimeout: 90_000 });

const DAY = 86_400;
const FIRST_DAY = Date.parse("2025-03-01T00:00:00Z") / 1000;
const CLI = new URL("../../bin/enterprise-admin.mjs", import.meta.url).pathname;

/** `count` events of acme's two members over 20 days, some late (older than events before them). */
function events(prefix: string, count: number, user_ids = ["7001", "7002"]) {
  return Array.from({ length: count }, (_, i) => ({
    event: checkUsageEvent({
      event_id: `${prefix}-${i}`, user_id: user_ids[i % user_ids.length], model_name: i % 3 === 0 ? "model-a" : "model-b",
      model_type: "Chat", model_source: "Builtin", timestamp: FIRST_DAY + ((i * 7919) % (20 * DAY)),
      input_tokens: 100 + i, output_tokens: i % 50, basic_amount: `0.00${i % 10}100`, pay_go_amount: "0",
    }, `event ${i}`),
    where: `event ${i}`,
  }));
}

describe.each(dialects)("usage rebuild on %s", (dialect) => {
  let testDb: TestDatabase;
  let database: Database;

  beforeAll(async () => {
    testDb = await createTestDatabase(dialect);
    database = openDatabase(testDb.url);
    await migrateToLatest(database);
    await importDirectory(database, acme);
    await importDirectory(database, globex);
    const usage = new UsageRepository(database);
    const sent = events("first", 600);
    for (let i = 0; i < sent.length; i += 100) await recordUsage(usage, "acme", sent.slice(i, i + 100));
    await recordUsage(usage, "globex", events("globex", 50, ["8001"]));
  });
  afterAll(async () => {
    await database.close();
    await testDb.drop();
  });

  /** Every running-total row of an enterprise, with its packed totals as hex. */
  const rows = async (enterpriseId = "acme") => (await database.db.selectFrom("usage_running_total as t")
    .innerJoin("member as m", "m.member_key", "t.member_key").select(["m.user_id", "t.day", "t.totals"])
    .where("m.enterprise_id", "=", enterpriseId).orderBy("m.user_id").orderBy("t.day").execute())
    .map((r) => `${r.user_id} ${r.day} ${Buffer.from(r.totals).toString("hex")}`);
  const rebuild = (enterpriseId = "acme") => cli(["usage", "rebuild", "--enterprise", enterpriseId, "--db", testDb.url]);

  it("makes lost and damaged rows again, byte for byte as ingestion wrote them, and touches no other enterprise", async () => {
    const written = await rows();
    const other = await rows("globex");
    expect(written.length).toBeGreaterThan(20);
    // Damage: a member's rows gone, another's rows holding some other row's totals.
    const keys = await database.db.selectFrom("member").select(["user_id", "member_key"]).where("enterprise_id", "=", "acme").execute();
    const keyOf = (userId: string) => keys.find((k) => k.user_id === userId)!.member_key;
    await database.db.deleteFrom("usage_running_total").where("member_key", "=", keyOf("7001")).execute();
    const sample = await database.db.selectFrom("usage_running_total").select("totals").where("member_key", "=", keyOf("7002")).executeTakeFirstOrThrow();
    await database.db.updateTable("usage_running_total").set({ totals: sample.totals }).where("member_key", "=", keyOf("7002")).execute();
    expect(await rows()).not.toStrictEqual(written);

    const run = await rebuild();
    expect([run.code, run.stderr]).toStrictEqual([0, ""]);
    expect(JSON.parse(run.stdout)).toStrictEqual({ enterprise_id: "acme", events: 600 });
    expect(await rows()).toStrictEqual(written);
    expect(await rows("globex")).toStrictEqual(other);
  });

  it("an unknown enterprise is one line on stderr and exit 2", async () => {
    const run = await rebuild("nope");
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe('error: --enterprise: enterprise "nope" does not exist (import a directory file first)');
  });

  it("while ingestion goes on beside it, every event counts once: a second rebuild changes nothing", async () => {
    const child = spawn(process.execPath, [CLI, "usage", "rebuild", "--enterprise", "acme", "--db", testDb.url], { env: { ...process.env, DATABASE_URL: "" } });
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    const exited = new Promise<number | null>((resolve) => child.once("close", resolve));
    const usage = new UsageRepository(database);
    const late = events("beside", 400);
    let recorded = 0;
    let done = false;
    void exited.then(() => (done = true));
    // Batches before, during and after the rebuild: each waits for the write lock when it must.
    for (let i = 0; i < late.length; i += 20) {
      recorded += (await recordUsage(usage, "acme", late.slice(i, i + 20))).recorded;
      if (done && i > 200) break;
    }
    expect(await exited).toBe(0);
    const rebuiltBeside = await rows();
    expect(JSON.parse(stdout).events).toBeGreaterThanOrEqual(600);
    expect(recorded).toBeGreaterThan(0);
    expect((await rebuild()).code).toBe(0);
    expect(await rows()).toStrictEqual(rebuiltBeside);
    const total = await database.db.selectFrom("usage_event").select((eb) => eb.fn.countAll<number | string>().as("n")).where("enterprise_id", "=", "acme").executeTakeFirstOrThrow();
    expect(Number(total.n)).toBe(600 + recorded);
  });
});
