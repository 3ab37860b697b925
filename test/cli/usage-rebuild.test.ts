// The real CLI: `usage rebuild --enterprise` makes an enterprise's running totals and rollups again
// from its raw events: byte for byte the rows that ingestion wrote, whatever was lost or damaged, and
// exact while ingestion goes on beside it; and it makes the rollups of a store whose events came
// before them, or after the enterprise's time zone changed.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatMicros } from "../../src/domain/money.js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { checkUsageEvent } from "../../src/domain/usage-event.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { recordUsage } from "../../src/operations/record-usage.js";
import { UsageReports, type UsageReportRequest } from "../../src/operations/usage-report.js";
import { DepartmentRepository } from "../../src/storage/department-repository.js";
import { migrateToLatest, openDatabase, type Database } from "../../src/storage/database.js";
import { UsageRepository } from "../../src/storage/usage-repository.js";
import type { GroupFigures } from "../../src/domain/report-cells.js";
import { cli } from "../helpers/cli.js";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/databases.js";
import { acme, globex } from "../helpers/fixtures.js";

vi.setConfig({ testTimeout: 90_000 });

const DAY = 86_400;
const FIRST_DAY = Date.parse("2025-03-01T00:00:00Z") / 1000;
const CLI = new URL("../../bin/enterprise-admin.mjs", import.meta.url).pathname;

/** A report group's figures as values: its key, distinct members and five sums. */
function figuresOf({ key, activeMembers, sums, row }: GroupFigures) {
  return { key, activeMembers, sums: [0, 1, 2, 3, 4].map((i) => String(sums.exact(row, i))) };
}

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
  /** Every rollup row of an enterprise and its layout, as a report reads them: the events held pending (API batches') added first. */
  const rollups = async (enterpriseId = "acme") => {
    await new UsageRepository(database).addPendingRollups(enterpriseId);
    return [
      ...(await database.db.selectFrom("usage_layout").select(["time_zone", "hour_phase"]).where("enterprise_id", "=", enterpriseId).execute())
        .map((r) => `layout ${r.time_zone} ${r.hour_phase}`),
      ...(await database.db.selectFrom("usage_rollup as r")
        .innerJoin("usage_rollup_members as m", (join) => join.onRef("m.enterprise_id", "=", "r.enterprise_id").onRef("m.grain", "=", "r.grain")
          .onRef("m.period", "=", "r.period").onRef("m.model_id", "=", "r.model_id"))
        .select(["r.grain", "r.period", "r.model_id", "r.member_count", "r.sums", "m.members", "m.member_sums"])
        .where("r.enterprise_id", "=", enterpriseId).orderBy("r.grain").orderBy("r.period").orderBy("r.model_id").execute())
        .map((r) => `${r.grain} ${r.period} ${r.model_id} ${r.member_count} ${r.sums} ${Buffer.from(r.members).toString("hex")} ${r.member_sums ? Buffer.from(r.member_sums).toString("hex") : "-"}`),
    ];
  };
  /** Reports of the enterprise that the rollups answer (day buckets in two zones by model, hours, one bucket), as JSON. */
  const reports = async () => {
    const service = new UsageReports(new UsageRepository(database), new DepartmentRepository(database.db));
    const base = { startTime: BigInt(FIRST_DAY - 7 * 3600 + 900), endTime: BigInt(FIRST_DAY + 21 * DAY), timeZone: "", bucket: "day", groupBy: [] as string[],
      departmentId: "", userIds: [], emails: [], pageSize: 0, pageToken: "" } satisfies UsageReportRequest;
    const answers = [];
    for (const request of [
      { ...base, groupBy: ["model"] }, { ...base, timeZone: "Asia/Kathmandu", groupBy: ["model"] },
      { ...base, bucket: "hour", endTime: base.startTime + BigInt(4 * DAY) }, { ...base, bucket: "none", timeZone: "America/New_York" },
    ]) {
      answers.push((await service.report("acme", request, new AbortController().signal)).buckets);
    }
    // A group's index is its number in one report's accumulation (the order met), not part of the answer; nor are the table and row its sums are in.
    return JSON.stringify(answers, (k, v: unknown) => (k === "index" ? undefined : k === "figures" ? figuresOf(v as GroupFigures) : v));
  };
  /** The same reports from the raw events alone: an enterprise without a rollup layout is read raw. */
  const rawReports = async () => {
    const layout = await database.db.selectFrom("usage_layout").selectAll().where("enterprise_id", "=", "acme").execute();
    await database.db.deleteFrom("usage_layout").where("enterprise_id", "=", "acme").execute();
    try {
      return await reports();
    } finally {
      if (layout.length > 0) await database.db.insertInto("usage_layout").values(layout).execute();
    }
  };
  const rebuild = (enterpriseId = "acme") => cli(["usage", "rebuild", "--enterprise", enterpriseId, "--db", testDb.url]);

  it("makes lost and damaged rows again, byte for byte as ingestion wrote them, and touches no other enterprise", async () => {
    const written = await rows();
    const other = await rows("globex");
    const writtenRollups = await rollups();
    const otherRollups = await rollups("globex");
    expect(written.length).toBeGreaterThan(20);
    expect(writtenRollups.length).toBeGreaterThan(100);
    expect(await reports()).toBe(await rawReports());
    // Damage to the rollups: a day's rows gone, an hour's sums changed.
    await database.db.deleteFrom("usage_rollup").where("enterprise_id", "=", "acme").where("grain", "=", 2).where("period", "<", FIRST_DAY + 3 * DAY).execute();
    await database.db.updateTable("usage_rollup").set({ sums: "1 2 3 4 5" }).where("enterprise_id", "=", "acme").where("grain", "=", 1).execute();
    expect(await rollups()).not.toStrictEqual(writtenRollups);
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
    expect(await rollups()).toStrictEqual(writtenRollups);
    expect(await rollups("globex")).toStrictEqual(otherRollups);
  });

  it("a store whose events came before its rollups is read raw, exactly, until a rebuild makes them", async () => {
    const exact = await rawReports();
    await database.db.deleteFrom("usage_rollup").where("enterprise_id", "=", "acme").execute();
    await database.db.deleteFrom("usage_layout").where("enterprise_id", "=", "acme").execute();
    // Ingestion adds no rollups to an enterprise that has events but no layout: they would be partial.
    await recordUsage(new UsageRepository(database), "acme", events("no-layout", 10));
    expect(await rollups()).toStrictEqual([]);
    const withNew = await reports();
    expect(withNew).not.toBe(exact);
    expect((await rebuild()).code).toBe(0);
    expect((await rollups())[0]).toBe("layout UTC 0");
    expect(await reports()).toBe(withNew);
  });

  it("an import into an enterprise whose layout is of another version adds its events and no pre-aggregate, until a rebuild", async () => {
    const written = await rows();
    const writtenRollups = await rollups();
    const exact = await rawReports();
    await database.db.updateTable("usage_layout").set({ version: 3 }).where("enterprise_id", "=", "acme").execute();
    const dir = mkdtempSync(join(tmpdir(), "eadmin-rebuild-"));
    try {
      const file = join(dir, "usage.ndjson");
      writeFileSync(file, events("stale-layout", 30).map(({ event }) => JSON.stringify({
        event_id: event.eventId, user_id: event.userId, model_name: event.modelName, model_type: event.modelType, model_source: event.modelSource,
        timestamp: event.timestamp, input_tokens: event.inputTokens, output_tokens: event.outputTokens,
        basic_amount: formatMicros(event.basicMicros), pay_go_amount: formatMicros(event.payGoMicros),
      })).join("\n") + "\n");
      const run = await cli(["import", "usage", file, "--enterprise", "acme", "--db", testDb.url]);
      expect([run.code, run.stderr]).toStrictEqual([0, ""]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(await rows()).toStrictEqual(written);
    expect((await rollups()).slice(1)).toStrictEqual(writtenRollups.slice(1));
    const withImport = await rawReports();
    expect(withImport).not.toBe(exact);
    expect((await rebuild()).code).toBe(0);
    expect(await rows()).not.toStrictEqual(written);
    expect(await reports()).toBe(withImport);
  });

  it("after the enterprise's zone changes, reports stay exact in the old layout, and a rebuild moves it to the new zone", async () => {
    const exact = await rawReports();
    await importDirectory(database, { ...acme, enterprise: { ...acme.enterprise, time_zone: "Asia/Kathmandu" } });
    try {
      // The default zone is now Kathmandu: the reports differ, the rollups (UTC days) still answer them exactly.
      const kathmandu = await reports();
      expect(kathmandu).not.toBe(exact);
      expect((await rollups())[0]).toBe("layout UTC 0");
      expect(kathmandu).toBe(await rawReports());
      expect((await rebuild()).code).toBe(0);
      expect((await rollups())[0]).toBe("layout Asia/Kathmandu 900");
      expect(await reports()).toBe(kathmandu);
    } finally {
      await importDirectory(database, acme);
      expect((await rebuild()).code).toBe(0);
    }
  });

  it("an unknown enterprise is one line on stderr naming --enterprise and exit 2, for a rebuild and for an import", async () => {
    const expected = 'error: --enterprise: enterprise "nope" does not exist (import a directory file first)';
    const run = await rebuild("nope");
    expect([run.code, run.stderr.trim()]).toStrictEqual([2, expected]);
    const dir = mkdtempSync(join(tmpdir(), "eadmin-rebuild-"));
    try {
      const file = join(dir, "usage.ndjson");
      writeFileSync(file, "");
      const imported = await cli(["import", "usage", file, "--enterprise", "nope", "--db", testDb.url]);
      expect([imported.code, imported.stdout, imported.stderr.trim()]).toStrictEqual([2, "", expected]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("while ingestion goes on beside it, every event counts once: a second rebuild changes nothing", async () => {
    const count = async () => Number((await database.db.selectFrom("usage_event").select((eb) => eb.fn.countAll<number | string>().as("n"))
      .where("enterprise_id", "=", "acme").executeTakeFirstOrThrow()).n);
    const before = await count();
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
    const rollupsBeside = await rollups();
    expect((await rebuild()).code).toBe(0);
    expect(await rows()).toStrictEqual(rebuiltBeside);
    expect(await rollups()).toStrictEqual(rollupsBeside);
    expect(await reports()).toBe(await rawReports());
    expect(await count()).toBe(before + recorded);
  });

  it("an event's values past 2^53 (written below the API, which takes at most 10^12) are rebuilt exactly", async () => {
    const huge = 2n ** 60n + 1n;
    await recordUsage(new UsageRepository(database), "globex", [{
      event: { eventId: "huge", userId: "8001", modelName: "model-a", modelType: "Chat", modelSource: "Builtin", timestamp: FIRST_DAY + 30 * DAY,
        inputTokens: huge, outputTokens: huge + 2n, basicMicros: huge + 4n, payGoMicros: 3 },
      where: "huge",
    }]);
    const [written, writtenRollups] = [await rows("globex"), await rollups("globex")];
    await database.db.deleteFrom("usage_running_total").where("member_key", "in",
      database.db.selectFrom("member").select("member_key").where("enterprise_id", "=", "globex")).execute();
    expect((await rebuild("globex")).code).toBe(0);
    expect(await rows("globex")).toStrictEqual(written);
    expect(await rollups("globex")).toStrictEqual(writtenRollups);
  });
});
