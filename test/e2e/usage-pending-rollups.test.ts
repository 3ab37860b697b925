// End to end: an API batch holds its events' share of the rollups pending (one usage_rollup_pending row) instead of rewriting the
// rollup rows, and the real server (`enterprise-admin serve`, a child process) adds them to the rollups when a report needs them, or
// when the pending events would pass 50,000. A server killed with kill -9 leaves them pending, and the next server's first report
// has them; two servers on one store, sent batches and reports at once, count every event once. Every report is checked against
// sums computed here from the events sent.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccessAdmin } from "../../src/operations/access-admin.js";
import { AuthRepository } from "../../src/storage/auth-repository.js";
import type { Database } from "../../src/storage/database.js";
import { DirectoryRepository } from "../../src/storage/directory-repository.js";
import { dialects, type TestDatabase } from "../helpers/databases.js";
import { createSeededDatabase } from "../helpers/seeded-database.js";
import { holdWriteLock } from "../helpers/write-lock.js";
import { parseJsonBig, sixDecimals } from "../helpers/usage-reference.js";

const CLI = fileURLToPath(new URL("../../bin/enterprise-admin.mjs", import.meta.url));
const RECORD = "/openapi/v1/usage/events/batch-record";
const REPORT = "/openapi/v1/statistics/usage-report";
const DAY = 86_400;
/** 2025-03-01T00:00:00Z: the events lie in the three days after it. */
const D0 = 1_740_787_200;
const MODELS = ["atlas", "boreas", "ceres"];
/** The most events and ingestions an enterprise holds pending, and the most UTC days a batch held pending may fall on (usage-repository.ts). */
const MAX_PENDING_EVENTS = 50_000;
const MAX_PENDING_ROWS = 64;
const PENDING_DAYS = 3;

interface SentEvent {
  user_id: string;
  model: string;
  ts: number;
  input: number;
  basicMicros: number;
}

describe.each(dialects)("rollups held pending by API batches (%s)", (dialect) => {
  let testDb: TestDatabase;
  let database: Database;
  let dir = "";
  let token = "";
  let sent = 0;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    ({ testDb, database } = await createSeededDatabase(dialect));
    dir = mkdtempSync(join(tmpdir(), "eadmin-pending-"));
    token = (await new AccessAdmin(new AuthRepository(database), new DirectoryRepository(database.db))
      .createToken("acme", ["usage:write", "statistics:read"], 3600)).accessToken;
  });

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await database?.close();
    await testDb?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** `enterprise-admin serve` on the test database; resolves with its base URL once it answers. */
  async function serve(env: Record<string, string> = {}): Promise<{ child: ChildProcess; baseUrl: string }> {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const child = spawn(process.execPath, [CLI, "serve", "--port", String(port), "--db", testDb.url], {
      env: { ...process.env, DATABASE_URL: "", LOG_LEVEL: "warn", RATE_LIMIT_RPS: "0", ENTERPRISE_ADMIN_MASTER_KEY_FILE: join(dir, "master.key"), ...env },
      stdio: "ignore",
    });
    children.push(child);
    const baseUrl = `http://127.0.0.1:${port}`;
    for (let tries = 0; ; tries++) {
      const ready = await fetch(`${baseUrl}/healthz`).then((res) => res.ok, () => false);
      if (ready) return { child, baseUrl };
      if (tries > 400 || child.exitCode !== null) throw new Error(`serve did not start (exit ${child.exitCode})`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** `count` new events of acme's two members over the three days, as one batch through REST (their ids taken before it is sent). */
  async function sendBatch(baseUrl: string, count: number): Promise<SentEvent[]> {
    const { status, events, text } = await postBatch(baseUrl, count);
    expect(status, text).toBe(200);
    expect((JSON.parse(text) as { data: unknown }).data).toMatchObject({ recorded: count });
    return events;
  }

  /** As sendBatch, answered as it may be: `headers` may give the call a deadline. */
  async function postBatch(baseUrl: string, count: number, headers: Record<string, string> = {}) {
    const first = sent;
    sent += count;
    const n = (i: number) => first + i;
    const events = Array.from({ length: count }, (_, i): SentEvent => ({
      user_id: n(i) % 3 === 0 ? "7002" : "7001", model: MODELS[n(i) % MODELS.length]!, ts: D0 + ((n(i) * 7919) % (3 * DAY)),
      input: 1 + (n(i) % 101), basicMicros: n(i) % 1000,
    }));
    const res = await fetch(baseUrl + RECORD, {
      method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
      body: JSON.stringify({
        events: events.map((e, i) => ({
          event_id: `pending-${n(i)}`, user_id: e.user_id, model_name: e.model, model_type: "Chat", model_source: "Builtin", timestamp: e.ts,
          input_tokens: e.input, output_tokens: 0, basic_amount: sixDecimals(BigInt(e.basicMicros)), pay_go_amount: "",
        })),
      }),
    });
    return { status: res.status, events, text: await res.text(), ids: events.map((_, i) => `pending-${n(i)}`) };
  }

  /** How many of acme's events the store holds pending. */
  async function pendingEvents(): Promise<number> {
    const rows = await database.db.selectFrom("usage_rollup_pending").select("event_count").where("enterprise_id", "=", "acme").execute();
    return rows.reduce((sum, row) => sum + Number(row.event_count), 0);
  }

  /** The report of the three days by model in UTC, against the sums of `events`, the events of every earlier test included. */
  async function expectReport(baseUrl: string, events: readonly SentEvent[]): Promise<void> {
    const res = await fetch(baseUrl + REPORT, {
      method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ start_time: D0, end_time: D0 + 3 * DAY, time_zone: "UTC", bucket: "day", group_by: ["model"] }),
    });
    const reply = parseJsonBig(await res.text());
    expect(reply.code, reply.message).toBe(0);
    const expected = [0, 1, 2].map((d) => MODELS.map((model) => {
      const of = events.filter((e) => e.model === model && e.ts >= D0 + d * DAY && e.ts < D0 + (d + 1) * DAY);
      const basic = of.reduce((sum, e) => sum + BigInt(e.basicMicros), 0n);
      return { model, events: of.length, active_members: new Set(of.map((e) => e.user_id)).size, input_tokens: of.reduce((sum, e) => sum + e.input, 0),
        basic_amount: sixDecimals(basic), total_amount: sixDecimals(basic) };
    }).filter((group) => group.events > 0));
    expect(reply.data.buckets.map((bucket: any) => bucket.groups.map((group: any) => ({
      model: group.model_name, events: group.events, active_members: group.active_members, input_tokens: group.input_tokens,
      basic_amount: group.basic_amount, total_amount: group.total_amount,
    })))).toStrictEqual(expected);
  }

  const all: SentEvent[] = [];

  it("a batch's events are pending until a report, which has them; a server killed (kill -9) with events pending leaves them to the next", async () => {
    let server = await serve();
    for (let b = 0; b < 3; b++) all.push(...(await sendBatch(server.baseUrl, 200)));
    expect(await pendingEvents()).toBe(600);
    await expectReport(server.baseUrl, all);
    expect(await pendingEvents()).toBe(0);

    for (let b = 0; b < 2; b++) all.push(...(await sendBatch(server.baseUrl, 300)));
    expect(await pendingEvents()).toBe(600);
    const killed = new Promise((resolve) => server.child.once("exit", (_code, signal) => resolve(signal)));
    server.child.kill("SIGKILL");
    expect(await killed).toBe("SIGKILL");
    expect(await pendingEvents()).toBe(600);

    server = await serve();
    await expectReport(server.baseUrl, all);
    expect(await pendingEvents()).toBe(0);
    server.child.kill("SIGTERM");
  });

  it(`a batch whose events fall on more than ${PENDING_DAYS} days is added to the rollups in its own call, not held pending; at most ${MAX_PENDING_ROWS} batches are held`, async () => {
    // Held pending, 30,000 events each of another day (in batches of 1,000, or of 31 days each) made the report that added them hold
    // the server's thread for seconds.
    const server = await serve();
    const spread = async (days: number, firstDay: number) => {
      const events = Array.from({ length: days }, (_, i) => ({
        event_id: `spread-${firstDay + i}`, user_id: "7001", model_name: "atlas", model_type: "Chat", model_source: "Builtin",
        timestamp: D0 - (firstDay + i) * DAY + 3600, input_tokens: 1000 + i, output_tokens: 0, basic_amount: "0.000001", pay_go_amount: "",
      }));
      const res = await fetch(server.baseUrl + RECORD, {
        method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ events }),
      });
      expect(res.status, await res.text()).toBe(200);
      return events.reduce((sum, e) => sum + e.input_tokens, 0);
    };
    const pendingBefore = await pendingEvents();
    let input = await spread(PENDING_DAYS, 1);
    expect(await pendingEvents()).toBe(pendingBefore + PENDING_DAYS);
    input += await spread(PENDING_DAYS + 1, PENDING_DAYS + 1);
    expect(await pendingEvents()).toBe(pendingBefore + PENDING_DAYS); // summed at once; the pending events left for a report
    const res = await fetch(server.baseUrl + REPORT, {
      method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ start_time: D0 - (2 * PENDING_DAYS + 1) * DAY, end_time: D0, time_zone: "UTC", bucket: "none", group_by: ["model"] }),
    });
    const groups = parseJsonBig(await res.text()).data.buckets[0].groups;
    expect(groups.map((g: any) => ({ model: g.model_name, events: g.events, input: g.input_tokens, basic: g.basic_amount })))
      .toStrictEqual([{ model: "atlas", events: 2 * PENDING_DAYS + 1, input, basic: sixDecimals(BigInt(2 * PENDING_DAYS + 1)) }]);
    expect(await pendingEvents()).toBe(0);

    // Batches of one event each on a day of its own: at most 64 are held pending, and the 65th adds them to the rollups first.
    for (let b = 0; b < MAX_PENDING_ROWS; b++) await spread(1, 2 * PENDING_DAYS + 2 + b);
    expect(await pendingEvents()).toBe(MAX_PENDING_ROWS);
    await spread(1, 2 * PENDING_DAYS + 2 + MAX_PENDING_ROWS);
    expect(await pendingEvents()).toBe(1);
    const counted = await fetch(server.baseUrl + REPORT, {
      method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ start_time: D0 - 100 * DAY, end_time: D0, time_zone: "UTC", bucket: "none" }),
    });
    expect(parseJsonBig(await counted.text()).data.buckets[0].groups[0].events).toBe(2 * PENDING_DAYS + 1 + MAX_PENDING_ROWS + 1);
    expect(await pendingEvents()).toBe(0);
    server.child.kill("SIGTERM");
  });

  it("while another writer holds the write lock past the busy timeout (a rebuild), a report reads the raw events, exactly; the events stay pending", async () => {
    const server = await serve({ STORE_BUSY_TIMEOUT_MS: "300" });
    all.push(...(await sendBatch(server.baseUrl, 250)));
    const release = await holdWriteLock(dialect, testDb.url);
    try {
      await expectReport(server.baseUrl, all);
      expect(await pendingEvents()).toBe(250);
    } finally {
      await release();
    }
    const deferred = async () => /^enterprise_admin_usage_rollups_deferred_total\{reason="busy"\} (\d+)$/m.exec(await (await fetch(`${server.baseUrl}/metrics`)).text())?.[1];
    expect(await deferred()).toBe("1"); // what tells an operator why the report was slow
    await expectReport(server.baseUrl, all);
    expect(await pendingEvents()).toBe(0);
    expect(await deferred()).toBe("1");
    server.child.kill("SIGTERM");
  });

  it("two servers on one store, batches and reports sent to both at once: every event counts once in every report", async () => {
    const servers = [await serve(), await serve()];
    for (let round = 0; round < 4; round++) {
      const before = all.length;
      const sending = servers.flatMap((server) => [sendBatch(server.baseUrl, 400), sendBatch(server.baseUrl, 300)]);
      // A report on each server while the batches are in flight: each counts what was committed before it, whole batches.
      const counted = await Promise.all(servers.map(async (server) => {
        const res = await fetch(server.baseUrl + REPORT, {
          method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ start_time: D0, end_time: D0 + 3 * DAY, bucket: "none" }),
        });
        return Number(parseJsonBig(await res.text()).data.buckets[0].groups[0].events);
      }));
      for (const events of counted) expect([0, 300, 400, 600, 700, 800, 1000, 1100, 1400].map((n) => before + n)).toContain(events);
      for (const batch of await Promise.all(sending)) all.push(...batch);
    }
    for (const server of servers) await expectReport(server.baseUrl, all);
    expect(await pendingEvents()).toBe(0);
    for (const server of servers) server.child.kill("SIGTERM");
  });

  it(`at most ${MAX_PENDING_EVENTS.toLocaleString("en-US")} events are held pending: the batch that would pass that adds them to the rollups first, even if its own call then ends`, async () => {
    const server = await serve();
    let most = 0;
    for (let b = 0; b < MAX_PENDING_EVENTS / 1000; b++) {
      all.push(...(await sendBatch(server.baseUrl, 1000)));
      most = Math.max(most, await pendingEvents());
    }
    expect(most).toBe(MAX_PENDING_EVENTS);
    // The batch that would pass it, with a deadline shorter than adding 50,000 events takes: the pending events are added in an
    // ingestion of their own, which stays when the batch's call ends first (504, the batch undone). Before, the two were undone together,
    // and every later batch with such a deadline met the same 50,000 and failed the same way.
    // Another writer holds the write lock a moment, so that the 250 ms pass before the pending events are added, whatever the machine.
    const release = await holdWriteLock(dialect, testDb.url);
    const sending = postBatch(server.baseUrl, 1000, { "connect-timeout-ms": "250" });
    await new Promise((resolve) => setTimeout(resolve, 600));
    await release();
    const late = await sending;
    expect(late.status).toBe(504);
    // The batch's call has ended; its flush goes on, commits, and the batch itself is undone.
    for (let tries = 0; tries < 400 && (await pendingEvents()) !== 0; tries++) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(await pendingEvents()).toBe(0);
    const lateStored = await database.db.selectFrom("usage_event").select("event_id").where("enterprise_id", "=", "acme").where("event_id", "in", late.ids).execute();
    expect(lateStored).toStrictEqual([]);
    all.push(...(await sendBatch(server.baseUrl, 1000)));
    expect(await pendingEvents()).toBe(1000);
    await expectReport(server.baseUrl, all);
    server.child.kill("SIGTERM");
  }, 120_000);
});
