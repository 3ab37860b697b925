// End to end: one server works on at most REPORT_MAX_RUNNING usage reports at once (set here to 1); later ones wait their turn
// while their call lasts (an enterprise's in arrival order, the enterprises taking turns), /metrics shows how many run and wait, a waiting call whose deadline passes leaves the line
// with 5040, a working report whose call ends keeps its turn until its work stops, and a request the server can refuse without the
// store is refused at once, turn or not. Without the cap, six reports of
// members over a year held 3.3 GB at once on a 10M-event store. To hold the first report in its turn, API batches leave rollups
// pending and another writer holds the store's write lock: the report waits for it (up to STORE_BUSY_TIMEOUT_MS) to add them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importDirectory } from "../../src/operations/import-directory.js";
import { dialects } from "../helpers/databases.js";
import { globex } from "../helpers/fixtures.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { parseJsonBig } from "../helpers/usage-reference.js";
import { holdWriteLock } from "../helpers/write-lock.js";

const RECORD = "/openapi/v1/usage/events/batch-record";
const REPORT = "/openapi/v1/statistics/usage-report";
const CONNECT_REPORT = "/enterprise_admin.v1.UsageService/GetUsageReport";
const D0 = 1_740_787_200; // 2025-03-01T00:00:00Z
const DAY = 86_400;
const WINDOW = { start_time: D0, end_time: D0 + 3 * DAY, time_zone: "UTC", bucket: "day", group_by: ["model"] };

describe.each(dialects)("usage reports take turns (%s)", (dialect) => {
  let svc: TestService;
  let token: string;

  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const reply = await fetch(svc.baseUrl + path, {
      method: "POST", body: JSON.stringify(body), headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
    });
    return { status: reply.status, json: parseJsonBig(await reply.text()) };
  };
  const load = async () => {
    const text = await (await fetch(`${svc.baseUrl}/metrics`)).text();
    const gauge = (name: string) => Number(/^(\S+) (\d+)$/m.exec(text.split("\n").filter((line) => line.startsWith(`${name} `)).join("\n"))?.[2]);
    return { running: gauge("enterprise_admin_usage_reports_running"), waiting: gauge("enterprise_admin_usage_reports_waiting") };
  };
  /** Polls /metrics until it shows `expected` (the calls in flight reach the server in their own time). */
  const loadBecomes = async (expected: { running: number; waiting: number }) => {
    let seen = await load();
    for (let tries = 0; tries < 200 && (seen.running !== expected.running || seen.waiting !== expected.waiting); tries++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      seen = await load();
    }
    return seen;
  };

  beforeAll(async () => {
    svc = await startTestService(dialect, { REPORT_MAX_RUNNING: "1", STORE_BUSY_TIMEOUT_MS: "20000" });
    token = await svc.token(["usage:write", "statistics:read"]);
    const events = Array.from({ length: 30 }, (_, i) => ({
      event_id: `turn-${i}`, user_id: "7001", model_name: i % 2 ? "atlas" : "boreas", model_type: "Chat", model_source: "Builtin",
      timestamp: D0 + i * 7200, input_tokens: 100 + i, output_tokens: 3, basic_amount: "0.001001", pay_go_amount: "0.000000",
    }));
    expect((await post(RECORD, { events })).status).toBe(200);
  });

  afterAll(async () => {
    await svc?.close();
  });

  it("one report works while the next wait in arrival order; a call that ends keeps its turn until its work stops, or leaves the line; bad input is refused at once", async () => {
    expect(await load()).toStrictEqual({ running: 0, waiting: 0 });
    const release = await holdWriteLock(dialect, svc.databaseUrl);
    const finished: string[] = [];
    const tracked = (name: string, reply: Promise<{ status: number; json: any }>) => reply.then((r) => (finished.push(name), r));
    let first: Promise<{ status: number; json: any }> | undefined;
    let second: typeof first;
    let third: typeof first;
    try {
      // The first report works in its turn on the write lock (to add the batch's pending rollups), past its caller's deadline.
      first = tracked("first", post(CONNECT_REPORT, WINDOW, { "connect-timeout-ms": "1000" }));
      expect(await loadBecomes({ running: 1, waiting: 0 })).toStrictEqual({ running: 1, waiting: 0 });
      second = tracked("second", post(REPORT, { ...WINDOW, group_by: [] }));
      expect(await loadBecomes({ running: 1, waiting: 1 })).toStrictEqual({ running: 1, waiting: 1 });
      third = tracked("third", post(REPORT, WINDOW));
      expect(await loadBecomes({ running: 1, waiting: 2 })).toStrictEqual({ running: 1, waiting: 2 });

      // A waiting call whose deadline passes leaves the line.
      const started = performance.now();
      const late = await post(CONNECT_REPORT, WINDOW, { "connect-timeout-ms": "300" });
      expect([late.status, late.json.code, late.json.details?.[0]?.debug?.code]).toStrictEqual([504, "deadline_exceeded", 5040]);
      expect(performance.now() - started).toBeLessThan(5000);
      // The first call has ended too (5040), but its report still waits on the lock: it keeps its turn, the others wait.
      const ended = await first;
      expect([ended.status, ended.json.details?.[0]?.debug?.code]).toStrictEqual([504, 5040]);
      expect(await load()).toStrictEqual({ running: 1, waiting: 2 });

      const bad = await post(REPORT, { ...WINDOW, end_time: D0 + 400 * DAY });
      expect([bad.status, bad.json.code]).toStrictEqual([400, 4001]);
      expect(bad.json.message).toContain("366");
      const zone = await post(REPORT, { ...WINDOW, time_zone: "Mars/Olympus" });
      expect([zone.status, zone.json.code]).toStrictEqual([400, 4001]);
      expect(zone.json.message).toContain("time_zone");
      const many = await post(REPORT, { ...WINDOW, user_ids: Array.from({ length: 101 }, (_, i) => String(9000 + i)) }, { "connect-timeout-ms": "3000" });
      expect([many.status, many.json.code, many.json.message]).toStrictEqual([400, 4001, "user_ids plus emails after de-duplication: 101 > 100"]);
    } finally {
      await release();
    }
    const [b, c] = await Promise.all([second!, third!]);
    expect([b.status, b.json.code, c.status, c.json.code]).toStrictEqual([200, 0, 200, 0]);
    expect(finished).toStrictEqual(["first", "second", "third"]);
    const totals = (data: any) => data.buckets.map((bucket: any) => bucket.groups.reduce((n: bigint, g: any) => n + BigInt(g.events), 0n));
    expect(totals(b.json.data)).toStrictEqual([12n, 12n, 6n]);
    expect(totals(c.json.data)).toStrictEqual([12n, 12n, 6n]);
    expect(await loadBecomes({ running: 0, waiting: 0 })).toStrictEqual({ running: 0, waiting: 0 });
  }, 60_000);

  it("the enterprises take turns: an enterprise's report waits behind another's only as far as that one has as few ahead of it", async () => {
    await importDirectory(svc.database, globex);
    const other = await svc.token(["statistics:read"], globex.enterprise.enterprise_id);
    // A batch leaves rollups pending again, so acme's next report waits on the write lock in its turn.
    const event = { event_id: "turn-fair", user_id: "7001", model_name: "atlas", model_type: "Chat", model_source: "Builtin",
      timestamp: D0 + 100, input_tokens: 1, output_tokens: 1, basic_amount: "0.000001", pay_go_amount: "0.000000" };
    expect((await post(RECORD, { events: [event] })).status).toBe(200);
    const release = await holdWriteLock(dialect, svc.databaseUrl);
    const finished: string[] = [];
    const replies: Promise<{ status: number; json: any }>[] = [];
    const send = (name: string, headers: Record<string, string> = {}) =>
      // Uncompressed: a gzipped answer is written a moment after its turn ends, so a small one of the next turn could come first.
      replies.push(post(REPORT, WINDOW, { "accept-encoding": "identity", ...headers }).then((r) => (finished.push(name), r)));
    try {
      send("acme 1");
      await loadBecomes({ running: 1, waiting: 0 });
      send("acme 2");
      send("acme 3");
      await loadBecomes({ running: 1, waiting: 2 });
      send("globex", { authorization: `Bearer ${other}` });
      expect(await loadBecomes({ running: 1, waiting: 3 })).toStrictEqual({ running: 1, waiting: 3 });
    } finally {
      await release();
    }
    expect((await Promise.all(replies)).map((reply) => reply.status)).toStrictEqual([200, 200, 200, 200]);
    // In arrival order globex's would have waited for all of acme's.
    expect(finished).toStrictEqual(["acme 1", "globex", "acme 2", "acme 3"]);
  }, 60_000);
});
