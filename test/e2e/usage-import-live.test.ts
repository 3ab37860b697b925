// End to end: `import usage` (the real CLI) beside live ingestion on the real server, and an import
// killed part-way (kill -9) and run again. Every acknowledged event is counted exactly once, and the
// running totals the usage query reads agree with a plain sum of the raw events after every step.
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { planWindow } from "../../src/domain/usage-window.js";
import { migrateToLatest, openDatabase, type Database } from "../../src/storage/database.js";
import { UsageRepository } from "../../src/storage/usage-repository.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { createTestDatabase, dialects, type DialectName, type TestDatabase } from "../helpers/databases.js";
import { acme } from "../helpers/fixtures.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { sumRows } from "../helpers/window-sums.js";
import { scratchFolder } from "../helpers/scratch-folder.js";

const CLI = fileURLToPath(new URL("../../bin/enterprise-admin.mjs", import.meta.url));
const DAY = 86_400;
/** The files' first midnight: every event lies within 120 days after it (the query reads at most 180). */
const FIRST_DAY = 1_735_689_600;
const SPAN_DAYS = 120;
const MODELS = ["model-a", "model-b", "model-c"];

/** `count` events of acme's two members in time order, over SPAN_DAYS days; event_ids `prefix-i`. */
function usageLines(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => JSON.stringify({
    event_id: `${prefix}-${i}`, user_id: i % 3 === 0 ? "7002" : "7001", model_name: MODELS[i % MODELS.length], model_type: "Chat",
    model_source: "Builtin", timestamp: FIRST_DAY + Math.floor((i * SPAN_DAYS * DAY) / count), input_tokens: 1 + (i % 97),
    output_tokens: i % 13, basic_amount: `0.${String(i % 1000).padStart(6, "0")}`, pay_go_amount: "0.000001",
  }));
}

interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function runCli(args: string[], env: Record<string, string> = {}, onStart?: (kill: () => void) => void): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, DATABASE_URL: "", ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("exit", (code, signal) => resolve({ code, signal, stdout, stderr }));
    onStart?.(() => child.kill("SIGKILL"));
  });
}

/**
 * The store agrees with itself: for acme's members, the usage query's sums (running totals at whole
 * days, raw events at the ends) over a whole-day window and an unaligned one equal a plain sum of the
 * raw events in the same window. Returns the number of acme's stored events.
 */
async function expectConsistent(database: Database): Promise<number> {
  const members = await database.db.selectFrom("member").select("member_key").where("enterprise_id", "=", "acme").orderBy("member_key").execute();
  const memberKeys = members.map((m) => Number(m.member_key));
  const repository = new UsageRepository(database);
  for (const [start, end] of [[FIRST_DAY - DAY, FIRST_DAY + (SPAN_DAYS + 1) * DAY], [FIRST_DAY + 3 * DAY + 4321, FIRST_DAY + 90 * DAY + 777]] as const) {
    const served = sumRows(await repository.sumUsage(memberKeys, planWindow(start, end)), memberKeys)
      .map((r) => [r.member_key, r.model_id, BigInt(r.input_tokens), BigInt(r.output_tokens), BigInt(r.basic_micros), BigInt(r.pay_go_micros)].join(","))
      .sort();
    const { rows } = await sql<{ m: number; model: number; i: string; o: string; b: string; p: string }>`
      select member_key as m, model_id as model, cast(sum(input_tokens) as text) as i, cast(sum(output_tokens) as text) as o,
        cast(sum(basic_micros) as text) as b, cast(sum(pay_go_micros) as text) as p
      from usage_event where enterprise_id = 'acme' and ts >= ${start} and ts < ${end} group by member_key, model_id`.execute(database.db);
    expect(served).toEqual(rows.map((r) => [Number(r.m), Number(r.model), r.i, r.o, r.b, r.p].join(",")).sort());
  }
  return storedEvents(database);
}

/** The number of acme's stored events. */
async function storedEvents(database: Database): Promise<number> {
  const { count } = await database.db.selectFrom("usage_event").select((eb) => eb.fn.countAll<number | string>().as("count"))
    .where("enterprise_id", "=", "acme").executeTakeFirstOrThrow();
  return Number(count);
}

describe.each(dialects)("import usage beside live ingestion on %s", (dialect: DialectName) => {
  let svc: TestService;
  const dir = scratchFolder("eadmin-import-live-");
  // A short wait for the write lock (the server's and the import's), so that some calls do wait it out and get 503 (then retried).
  const busyTimeout = { STORE_BUSY_TIMEOUT_MS: "100" };

  beforeAll(async () => {
    svc = await startTestService(dialect, busyTimeout);
  });
  afterAll(async () => {
    await svc?.close();
  });

  it("the import exits 0, every call gets 200 or 503 with Retry-After, and each acknowledged event counts once", async () => {
    const fileEvents = 20_000;
    const path = join(dir, "usage.ndjson");
    writeFileSync(path, usageLines("file", fileEvents).join("\n"));
    const token = await svc.token(["usage:write"]);
    let importing = true;
    const imported = runCli(["import", "usage", path, "--enterprise", "acme", "--db", svc.databaseUrl], { ...busyTimeout, IMPORT_CHUNK_EVENTS: "500" })
      .finally(() => (importing = false));

    // Calls start once the import has committed a chunk: its members' running totals are then its own, until a call changes them.
    const fileEventsStored = async () => Number((await svc.database.db.selectFrom("usage_event").select((eb) => eb.fn.countAll<number | string>().as("n"))
      .where("event_id", "like", "file-%").executeTakeFirstOrThrow()).n);
    while (importing && (await fileEventsStored()) === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await fileEventsStored()).toBeLessThan(fileEvents);
    const statuses = new Map<number, number>();
    let acknowledged = 0;
    let batches = 0;
    // Three callers, each sending batches of 50 events on the file's members and days (so the import's running totals meet them).
    const caller = async () => {
      while (importing || batches < 30) {
        const events = usageLines(`rpc-${batches++}`, 50).map((line) => JSON.parse(line));
        for (;;) {
          const reply = await fetch(`${svc.baseUrl}/openapi/v1/usage/events/batch-record`, {
            method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ events }),
          });
          const body = (await reply.json()) as { code: number; data: { recorded: number } };
          statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
          if (reply.status === 503) {
            expect(reply.headers.get("retry-after")).toBe("1");
            expect(body.code).toBe(5030);
            await new Promise((resolve) => setTimeout(resolve, 20));
            continue;
          }
          expect({ status: reply.status, body }).toMatchObject({ status: 200, body: { code: 0 } });
          acknowledged += body.data.recorded;
          break;
        }
      }
    };
    await Promise.all([caller(), caller(), caller()]);

    const result = await imported;
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ enterprise_id: "acme", lines: fileEvents, recorded: fileEvents, duplicates: 0 });
    expect([...statuses.keys()].filter((status) => status !== 200 && status !== 503)).toEqual([]);
    expect(acknowledged).toBe(batches * 50);
    expect(await expectConsistent(svc.database)).toBe(fileEvents + acknowledged);
    expect(svc.logs.filter((line) => line.includes('"status":500'))).toEqual([]);
  }, 180_000);
});

describe.each(dialects)("an import killed part-way on %s", (dialect: DialectName) => {
  let testDb: TestDatabase;
  let database: Database;
  const dir = scratchFolder("eadmin-import-crash-");

  beforeAll(async () => {
    testDb = await createTestDatabase(dialect);
    database = openDatabase(testDb.url);
    await migrateToLatest(database);
    await importDirectory(database, acme);
  });
  afterAll(async () => {
    await database?.close();
    await testDb?.drop();
  });

  it("leaves whole chunks whose totals agree with their events; running it again completes it exactly", async () => {
    const [fileEvents, chunkEvents] = [10_000, 250];
    const path = join(dir, "usage.ndjson");
    writeFileSync(path, usageLines("crash", fileEvents).join("\n"));
    const args = ["import", "usage", path, "--enterprise", "acme", "--db", testDb.url];
    const env = { IMPORT_CHUNK_EVENTS: String(chunkEvents) };
    let storedAtKill = 0;
    const killed = await runCli(args, env, (kill) => {
      // Killed once a few chunks have committed, well before the last (a count is all a poll needs).
      const poll = setInterval(async () => {
        const stored = await storedEvents(database).catch(() => 0);
        if (stored >= 3 * chunkEvents) {
          clearInterval(poll);
          kill();
          storedAtKill = stored;
        }
      }, 25);
    });
    expect(killed.signal).toBe("SIGKILL");
    expect(storedAtKill).toBeGreaterThanOrEqual(3 * chunkEvents);
    const prefix = await expectConsistent(database);
    expect(prefix).toBeGreaterThanOrEqual(storedAtKill);
    expect(prefix).toBeLessThan(fileEvents);
    expect(prefix % chunkEvents).toBe(0); // whole chunks only

    const rerun = await runCli(args, env);
    expect(rerun.code).toBe(0);
    expect(JSON.parse(rerun.stdout)).toEqual({ enterprise_id: "acme", lines: fileEvents, recorded: fileEvents - prefix, duplicates: prefix });
    expect(await expectConsistent(database)).toBe(fileEvents);

    // Exactly one import's totals: the file's own sums, member by member and model by model.
    const { rows } = await sql<{ m: string; i: string }>`select member.user_id as m, cast(sum(input_tokens) as text) as i
      from usage_event join member on member.member_key = usage_event.member_key where usage_event.enterprise_id = 'acme'
      group by member.user_id order by member.user_id`.execute(database.db);
    const expected = new Map<string, bigint>();
    for (const line of usageLines("crash", fileEvents)) {
      const event = JSON.parse(line);
      expected.set(event.user_id, (expected.get(event.user_id) ?? 0n) + BigInt(event.input_tokens));
    }
    expect(rows.map((r) => [r.m, r.i])).toEqual([...expected].sort().map(([m, i]) => [m, String(i)]));
  }, 180_000);
});
