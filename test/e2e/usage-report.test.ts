// End to end: the usage report (POST /openapi/v1/statistics/usage-report) and the daily trend (GET
// /openapi/v1/statistics/core-metrics) against the real service, SQLite and PostgreSQL: local-time
// buckets (daylight-saving days, +05:45 and +05:30 zones), groups, department subtrees, member
// pages, the exactness rule against user-model-usage, limits, permission and every transport.
//
// Each scenario gets an enterprise of its own, its events written through the API; expected figures
// are computed here from those events with plain bigint sums (test/helpers/usage-reference.ts).
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UsageService } from "../../gen/enterprise_admin/v1/usage_pb.js";
import type { DirectoryFile } from "../../src/domain/directory-file.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { recordUsage } from "../../src/operations/record-usage.js";
import { UsageRepository } from "../../src/storage/usage-repository.js";
import { dialects } from "../helpers/databases.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { withThreadGaps } from "../helpers/thread-gaps.js";
import { byCodePoint, parseJsonBig, sixDecimals } from "../helpers/usage-reference.js";

const REPORT = "/openapi/v1/statistics/usage-report";
const CORE_METRICS = "/openapi/v1/statistics/core-metrics";
const QUERY = "/openapi/v1/statistics/user-model-usage";
const RECORD = "/openapi/v1/usage/events/batch-record";
const HOUR = 3_600;
const DAY = 86_400;
/** Seconds of an ISO instant. */
const at = (iso: string) => Date.parse(iso) / 1000;

interface Reply {
  status: number;
  json: any;
}

/** An event as this test writes it and sums it. */
interface Ev {
  user_id: string;
  model: [name: string, type: "Chat" | "CUE", source: "Builtin" | "Custom"];
  ts: number;
  input: bigint;
  output: bigint;
  basic: bigint;
  payGo: bigint;
}

interface Figures {
  events: number | bigint;
  active_members: number | bigint;
  input_tokens: number | bigint;
  output_tokens: number | bigint;
  basic_amount: string;
  pay_go_amount: string;
  total_amount: string;
}

/** How parseJsonBig reads an integer back: a number below 16 digits, else a bigint. */
const int = (n: bigint): number | bigint => (n.toString().length >= 16 ? n : Number(n));

/** The figures of some events, as the REST answer prints them. */
function figuresOf(events: readonly Ev[]): Figures {
  const sum = (pick: (e: Ev) => bigint) => events.reduce((s, e) => s + pick(e), 0n);
  const basic = sum((e) => e.basic);
  const payGo = sum((e) => e.payGo);
  return {
    events: events.length,
    active_members: new Set(events.map((e) => e.user_id)).size,
    input_tokens: int(sum((e) => e.input)),
    output_tokens: int(sum((e) => e.output)),
    basic_amount: sixDecimals(basic),
    pay_go_amount: sixDecimals(payGo),
    total_amount: sixDecimals(basic + payGo),
  };
}

const EMPTY_KEYS = { model_name: "", model_type: "", model_source: "", user_id: "", email: "", department_id: "", department_name: "", former_member: false };
const ZEROS = figuresOf([]);

/** A small deterministic random source (mulberry32), so a failure can be replayed. */
function randomSource(seed: number): (n: number) => number {
  let a = seed;
  return (n) => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

describe.each(dialects)("usage report (%s)", (dialect) => {
  let svc: TestService;
  let tenants = 0;
  let eventSeq = 0;

  beforeAll(async () => {
    svc = await startTestService(dialect);
  });

  afterAll(async () => {
    await svc?.close();
  });

  /** A fresh enterprise from `file` (its enterprise_id replaced by a unique one); its id and a token with every permission. */
  async function tenant(file: Omit<DirectoryFile, "enterprise"> & { time_zone?: string; currency?: "CNY" | "USD" }): Promise<{ id: string; token: string }> {
    const id = `report-${dialect}-${++tenants}`;
    await importDirectory(svc.database, {
      enterprise: { enterprise_id: id, name: `Tenant ${tenants}`, currency: file.currency ?? "CNY", ...(file.time_zone ? { time_zone: file.time_zone } : {}) },
      departments: file.departments,
      members: file.members,
    });
    return { id, token: await svc.token(undefined, id) };
  }

  /** Members without departments, with these user_ids. */
  const plainMembers = (ids: readonly string[]) =>
    ids.map((user_id) => ({ user_id, email: `u${user_id}@example.com`, account_type: 1 as const, department_ids: [] }));

  async function call(method: "GET" | "POST", path: string, token: string, body?: unknown): Promise<Reply> {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(svc.baseUrl + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, json: parseJsonBig(await res.text()) };
  }

  /** The report's `data`, after checking it succeeded. */
  async function report(token: string, body: Record<string, unknown>): Promise<any> {
    const reply = await call("POST", REPORT, token, body);
    expect(reply.json.code, reply.json.message).toBe(0);
    expect(reply.status).toBe(200);
    return reply.json.data;
  }

  async function coreMetrics(token: string, query: Record<string, string>): Promise<Reply> {
    return call("GET", `${CORE_METRICS}?${new URLSearchParams(query)}`, token);
  }

  /** Writes events through the API (batches of 1,000). */
  async function write(token: string, events: readonly Ev[]): Promise<void> {
    for (let i = 0; i < events.length; i += 1000) {
      const reply = await call("POST", RECORD, token, {
        events: events.slice(i, i + 1000).map((e) => ({
          event_id: `e-${++eventSeq}`, user_id: e.user_id, model_name: e.model[0], model_type: e.model[1], model_source: e.model[2],
          timestamp: e.ts, input_tokens: Number(e.input), output_tokens: Number(e.output),
          basic_amount: sixDecimals(e.basic), pay_go_amount: sixDecimals(e.payGo),
        })),
      });
      expect(reply.status, JSON.stringify(reply.json)).toBe(200);
    }
  }

  const CHAT: Ev["model"] = ["atlas", "Chat", "Builtin"];
  const ev = (user_id: string, ts: number, input = 1n, basic = 0n, model = CHAT): Ev =>
    ({ user_id, model, ts, input, output: input * 2n, basic, payGo: basic / 3n });

  async function expectInvalid(reply: Reply, ...words: string[]): Promise<void> {
    expect(reply.json, JSON.stringify(reply.json)).toMatchObject({ code: 4001, data: null });
    for (const word of words) expect(reply.json.message).toContain(word);
    expect(reply.status).toBe(400);
  }

  // ---------------------------------------------------------------------------------------------
  describe("local-time buckets", () => {
    it("a daylight-saving day in America/New_York lasts 23 hours in March and 25 in November, each with its own events", async () => {
      const t = await tenant({ departments: [], members: plainMembers(["1", "2"]) });
      const events = [
        ev("1", at("2024-03-10T06:59:59Z"), 1n, 1n), // 01:59:59 EST, March 10
        ev("1", at("2024-03-10T07:00:00Z"), 2n, 2n), // 03:00:00 EDT, March 10
        ev("2", at("2024-03-11T03:59:59Z"), 4n, 4n), // 23:59:59 EDT, March 10
        ev("2", at("2024-03-11T04:00:00Z"), 8n, 8n), // 00:00:00 EDT, March 11
        ev("1", at("2024-11-03T05:30:00Z"), 16n, 16n), // 01:30 EDT, November 3
        ev("1", at("2024-11-03T06:30:00Z"), 32n, 32n), // 01:30 EST, November 3 (the repeated hour)
        ev("2", at("2024-11-04T04:59:59Z"), 64n, 64n), // 23:59:59 EST, November 3
        ev("2", at("2024-11-04T05:00:00Z"), 128n, 128n), // 00:00 EST, November 4
      ];
      await write(t.token, events);

      const march = await report(t.token, {
        start_time: at("2024-03-09T05:00:00Z"), end_time: at("2024-03-12T04:00:00Z"), time_zone: "America/New_York",
      });
      expect(march.time_zone).toBe("America/New_York");
      expect(march.buckets.map((b: any) => [b.date, b.end_time - b.start_time])).toStrictEqual([
        ["2024-03-09", 24 * HOUR], ["2024-03-10", 23 * HOUR], ["2024-03-11", 24 * HOUR],
      ]);
      expect(march.buckets.map((b: any) => b.groups)).toStrictEqual([
        [{ ...EMPTY_KEYS, ...ZEROS }],
        [{ ...EMPTY_KEYS, ...figuresOf(events.slice(0, 3)) }],
        [{ ...EMPTY_KEYS, ...figuresOf(events.slice(3, 4)) }],
      ]);

      const november = await report(t.token, {
        start_time: at("2024-11-03T04:00:00Z"), end_time: at("2024-11-05T05:00:00Z"), time_zone: "America/New_York", bucket: "day",
      });
      expect(november.buckets.map((b: any) => [b.date, b.start_time, b.end_time])).toStrictEqual([
        ["2024-11-03", at("2024-11-03T04:00:00Z"), at("2024-11-04T05:00:00Z")],
        ["2024-11-04", at("2024-11-04T05:00:00Z"), at("2024-11-05T05:00:00Z")],
      ]);
      expect(november.buckets[0].end_time - november.buckets[0].start_time).toBe(25 * HOUR);
      expect(november.buckets.map((b: any) => b.groups)).toStrictEqual([
        [{ ...EMPTY_KEYS, ...figuresOf(events.slice(4, 7)) }],
        [{ ...EMPTY_KEYS, ...figuresOf(events.slice(7)) }],
      ]);
    });

    it("days in Asia/Kathmandu (+05:45) start at 18:15 UTC; the first and last bucket are cut at the window's edges", async () => {
      const t = await tenant({ departments: [], members: plainMembers(["1"]) });
      const events = [
        ev("1", at("2024-10-27T18:14:59Z"), 1n), // 23:59:59 on the 27th
        ev("1", at("2024-10-27T18:15:00Z"), 2n), // 00:00:00 on the 28th
        ev("1", at("2024-10-28T18:14:59Z"), 4n), // 23:59:59 on the 28th
        ev("1", at("2024-10-28T18:15:00Z"), 8n), // 00:00 on the 29th
        ev("1", at("2024-10-29T01:00:00Z"), 16n), // at end_time: not counted
      ];
      await write(t.token, events);
      const start = at("2024-10-27T10:00:07Z");
      const end = at("2024-10-29T01:00:00Z");
      const data = await report(t.token, { start_time: start, end_time: end, time_zone: "Asia/Kathmandu", group_by: ["model"] });
      expect(data.buckets.map((b: any) => [b.date, b.start_time, b.end_time])).toStrictEqual([
        ["2024-10-27", start, at("2024-10-27T18:15:00Z")],
        ["2024-10-28", at("2024-10-27T18:15:00Z"), at("2024-10-28T18:15:00Z")],
        ["2024-10-29", at("2024-10-28T18:15:00Z"), end],
      ]);
      const model = { ...EMPTY_KEYS, model_name: "atlas", model_type: "Chat", model_source: "Builtin" };
      expect(data.buckets.map((b: any) => b.groups)).toStrictEqual([
        [{ ...model, ...figuresOf(events.slice(0, 1)) }],
        [{ ...model, ...figuresOf(events.slice(1, 3)) }],
        [{ ...model, ...figuresOf(events.slice(3, 4)) }],
      ]);
    });

    it("days whose midnight is off the quarter hour (Africa/Monrovia, -00:44:30 until 1972, the enterprise's zone) hold their own events", async () => {
      const t = await tenant({ time_zone: "Africa/Monrovia", departments: [], members: plainMembers(["1", "2"]) });
      const OTHER: Ev["model"] = ["zephyr", "CUE", "Builtin"];
      const events = [
        ev("1", at("1971-03-10T00:44:29Z"), 1n, 1n), // 23:59:59 on the 9th
        ev("1", at("1971-03-10T00:44:30Z"), 2n, 2n), // 00:00:00 on the 10th, in the quarter hour that began on the 9th
        ev("2", at("1971-03-10T00:44:59Z"), 4n, 4n, OTHER),
        ev("1", at("1971-03-10T00:45:00Z"), 8n, 8n),
        ev("2", at("1971-03-11T00:44:29Z"), 16n, 16n), // 23:59:59 on the 10th
        ev("2", at("1971-03-11T00:44:30Z"), 32n, 32n, OTHER), // 00:00:00 on the 11th
      ];
      await write(t.token, events);
      const window = { start_time: at("1971-03-09T00:44:30Z"), end_time: at("1971-03-12T00:44:30Z") };
      const days = [events.slice(0, 1), events.slice(1, 5), events.slice(5)];
      const plain = await report(t.token, window);
      expect(plain.buckets.map((b: any) => b.date)).toStrictEqual(["1971-03-09", "1971-03-10", "1971-03-11"]);
      expect(plain.buckets.map((b: any) => b.groups)).toStrictEqual(days.map((some) => [{ ...EMPTY_KEYS, ...figuresOf(some) }]));
      const modelKeys = (m: Ev["model"]) => ({ ...EMPTY_KEYS, model_name: m[0], model_type: m[1], model_source: m[2] });
      const byModel = await report(t.token, { ...window, group_by: ["model"] });
      expect(byModel.buckets.map((b: any) => b.groups)).toStrictEqual(days.map((some) => [CHAT, OTHER]
        .map((m) => ({ ...modelKeys(m), ...figuresOf(some.filter((e) => e.model === m)) })).filter((g) => g.events !== 0)));
      const byMember = await report(t.token, { ...window, group_by: ["member"] });
      expect(byMember.buckets.map((b: any) => b.groups)).toStrictEqual(days.map((some) => ["1", "2"]
        .map((id) => ({ ...EMPTY_KEYS, user_id: id, email: `u${id}@example.com`, ...figuresOf(some.filter((e) => e.user_id === id)) }))
        .filter((g) => g.events !== 0)));
      const trend = await coreMetrics(t.token, { start_date: "1971-03-09", end_date: "1971-03-11" });
      expect(trend.json.data.items.map((item: any) => item.events)).toStrictEqual(days.map((some) => some.length));

      // Hours from 00:44:30 by model, kept between reports: a new event in the first one's first quarter hour is in the next report.
      const hours = { start_time: at("1971-03-10T00:44:30Z"), end_time: at("1971-03-10T03:44:30Z"), bucket: "hour", group_by: ["model"] };
      const eventsPerHour = async () => (await report(t.token, hours)).buckets.map((b: any) => b.groups.reduce((n: number, g: any) => n + g.events, 0));
      expect(await eventsPerHour()).toStrictEqual([3, 0, 0]);
      await write(t.token, [ev("2", at("1971-03-10T00:44:40Z"))]);
      expect(await eventsPerHour()).toStrictEqual([4, 0, 0]);
    });

    it("hour buckets in Asia/Kolkata (+05:30) start at half past the UTC hour, empty hours listed", async () => {
      const t = await tenant({ departments: [], members: plainMembers(["1"]) });
      const events = [ev("1", at("2024-10-28T00:29:59Z"), 1n), ev("1", at("2024-10-28T00:30:00Z"), 2n), ev("1", at("2024-10-28T02:45:00Z"), 4n)];
      await write(t.token, events);
      const start = at("2024-10-28T00:10:00Z");
      const data = await report(t.token, { start_time: start, end_time: start + 3 * HOUR, time_zone: "Asia/Kolkata", bucket: "hour" });
      expect(data.buckets.map((b: any) => [b.date, b.start_time, b.end_time])).toStrictEqual([
        ["", start, at("2024-10-28T00:30:00Z")],
        ["", at("2024-10-28T00:30:00Z"), at("2024-10-28T01:30:00Z")],
        ["", at("2024-10-28T01:30:00Z"), at("2024-10-28T02:30:00Z")],
        ["", at("2024-10-28T02:30:00Z"), start + 3 * HOUR],
      ]);
      expect(data.buckets.map((b: any) => b.groups[0].events)).toStrictEqual([1, 1, 0, 1]);
      expect(data.buckets[3].groups).toStrictEqual([{ ...EMPTY_KEYS, ...figuresOf(events.slice(2)) }]);
    });

    it("hour buckets hold one local hour each where the clock jumps inside a UTC hour (Pacific/Chatham, +13:45/+12:45) and by half an hour (Lord_Howe)", async () => {
      const t = await tenant({ departments: [], members: plainMembers(["1"]) });
      // An event each quarter hour around Chatham's fall-back (2024-04-07 03:45 +13:45 -> 02:45 +12:45, 04-06 14:00 UTC) and spring-forward
      // (2024-09-29 02:45 +12:45 -> 03:45 +13:45, 09-28 14:00 UTC), and Lord_Howe's fall-back (2024-04-07 02:00 +11 -> 01:30 +10:30, 04-06 15:00 UTC).
      const windows = [[at("2024-04-06T11:00:00Z"), "Pacific/Chatham"], [at("2024-09-28T11:00:00Z"), "Pacific/Chatham"], [at("2024-04-06T12:00:00Z"), "Australia/Lord_Howe"]] as const;
      const events = windows.flatMap(([start]) => Array.from({ length: 24 }, (_, q) => ev("1", start + q * 900 + 1, 1n)));
      await write(t.token, events);
      const localHour = (ts: number, zone: string) =>
        new Intl.DateTimeFormat("en-US", { timeZone: zone, hour: "2-digit", hourCycle: "h23", timeZoneName: "longOffset" }).format(ts * 1000);
      for (const [start, zone] of windows) {
        const data = await report(t.token, { start_time: start, end_time: start + 6 * HOUR, time_zone: zone, bucket: "hour" });
        for (const b of data.buckets) expect(localHour(b.end_time - 1, zone), `${zone} bucket ${b.start_time}..${b.end_time}`).toBe(localHour(b.start_time, zone));
        const cut = start === at("2024-04-06T12:00:00Z") ? at("2024-04-06T15:00:00Z") : start + 3 * HOUR;
        expect(data.buckets.some((b: any) => b.start_time === cut), `${zone}: a bucket starts at the jump`).toBe(true);
        expect(data.buckets.reduce((n: number, b: any) => n + Number(b.groups[0].events), 0)).toBe(events.filter((e) => e.ts >= start && e.ts < start + 6 * HOUR).length);
      }
    });

    it("hour buckets of a window that starts in a jump's skipped or repeated stretch begin at the window's start and follow each other (events were lost, empty buckets ran backwards)", async () => {
      const t = await tenant({ departments: [], members: plainMembers(["1"]) });
      // Chatham's fall-back and spring-forward (2024-04-06 and 09-28, 14:00 UTC, an hour each way at :45) and Lord_Howe's fall-back
      // (2024-04-06 15:00 UTC, half an hour); an event every 5 minutes from an hour before each to 5 hours after.
      const jumps = [[at("2024-04-06T14:00:00Z"), "Pacific/Chatham"], [at("2024-09-28T14:00:00Z"), "Pacific/Chatham"], [at("2024-04-06T15:00:00Z"), "Australia/Lord_Howe"]] as const;
      const events = jumps.flatMap(([jump]) => Array.from({ length: 72 }, (_, i) => ev("1", jump - HOUR + i * 300 + 1, 1n)));
      await write(t.token, events);
      for (const [jump, zone] of jumps) {
        for (let start = jump - 30 * 60; start <= jump + HOUR; start += 5 * 60) {
          const end = start + 3 * HOUR;
          const data = await report(t.token, { start_time: start, end_time: end, time_zone: zone, bucket: "hour" });
          const edges = data.buckets.map((b: any) => [b.start_time, b.end_time]);
          expect(edges[0][0], `${zone} from ${start}`).toBe(start);
          expect(edges.at(-1)[1], `${zone} from ${start}`).toBe(end);
          edges.forEach(([from, to]: number[], i: number) => {
            expect(from, `${zone} from ${start}: bucket ${i}`).toBeLessThan(to!);
            if (i > 0) expect(from, `${zone} from ${start}: bucket ${i}`).toBe(edges[i - 1][1]);
          });
          const counted = data.buckets.reduce((n: number, b: any) => n + Number(b.groups[0]?.events ?? 0), 0);
          expect(counted, `${zone} from ${start}`).toBe(events.filter((e) => e.ts >= start && e.ts < end).length);
        }
      }
    });

    it('bucket "none" is one bucket over the whole window; the default zone is the enterprise\'s', async () => {
      const t = await tenant({ time_zone: "Asia/Kathmandu", currency: "USD", departments: [], members: plainMembers(["1"]) });
      const events = [ev("1", 1_000_000, 3n, 5n), ev("1", 1_000_000 + 40 * DAY, 7n, 11n)];
      await write(t.token, events);
      const none = await report(t.token, { start_time: 999_000, end_time: 1_000_000 + 300 * DAY, bucket: "none" });
      expect(none).toStrictEqual({
        currency: "USD", time_zone: "Asia/Kathmandu", next_page_token: "", not_found_user_ids: [], not_found_emails: [],
        buckets: [{ start_time: 999_000, end_time: 1_000_000 + 300 * DAY, date: "", groups: [{ ...EMPTY_KEYS, ...figuresOf(events) }] }],
      });
      const days = await report(t.token, { start_time: 1_000_000, end_time: 1_000_000 + 1 });
      expect(days.buckets[0].date).toBe("1970-01-12"); // 13:46:40 UTC is 19:31:40 in Kathmandu
    });
  });

  // ---------------------------------------------------------------------------------------------
  describe("groups", () => {
    it("groups by model then member in code point order, with the named members only and the unknown ones listed", async () => {
      const members = [
        { user_id: "9", email: "nine@example.com", account_type: 1 as const, department_ids: [] },
        { user_id: "10", email: "Ten@Example.com", account_type: 2 as const, department_ids: [] },
        { user_id: "11", email: "eleven@example.com", account_type: 1 as const, department_ids: [] },
      ];
      const t = await tenant({ departments: [], members });
      const zeta: Ev["model"] = ["Zeta", "Chat", "Builtin"];
      const acme: Ev["model"] = ["acme", "CUE", "Builtin"];
      const custom: Ev["model"] = ["acme", "Chat", "Custom"];
      const T = at("2024-06-01T12:00:00Z");
      const events = [
        ev("9", T, 1n, 1_000_000n, acme), ev("10", T + 1, 2n, 0n, zeta), ev("9", T + 2, 3n, 5n, zeta),
        { ...ev("10", T + 3, 4n, 0n, custom), basic: 0n, payGo: 0n }, ev("11", T + 4, 5n, 7n, zeta),
      ];
      await write(t.token, events);
      const data = await report(t.token, {
        start_time: T, end_time: T + HOUR, bucket: "none", group_by: ["model", "member"],
        user_ids: ["9", 10, "nope"], emails: ["TEN@example.com", "ghost@example.com"],
      });
      expect(data.not_found_user_ids).toStrictEqual(["nope"]);
      expect(data.not_found_emails).toStrictEqual(["ghost@example.com"]);
      const group = (model: Ev["model"], userId: string, email: string) => ({
        ...EMPTY_KEYS, model_name: model[0], model_type: model[1], model_source: model[2], user_id: userId, email,
        ...figuresOf(events.filter((e) => e.model === model && e.user_id === userId)),
      });
      expect(data.buckets[0].groups).toStrictEqual([
        group(zeta, "10", "Ten@Example.com"), group(zeta, "9", "nine@example.com"),
        group(acme, "9", "nine@example.com"), group(custom, "10", "Ten@Example.com"),
      ]);
      expect(data.buckets[0].groups[3].total_amount).toBe("0.000000");
    });

    it("by model and by member in zones not the enterprise's, by day and by hour: each group's figures and distinct members per bucket", async () => {
      const t = await tenant({ time_zone: "Asia/Kolkata", departments: [], members: plainMembers(["1", "2", "3"]) });
      const zeta: Ev["model"] = ["Zeta", "Chat", "Builtin"];
      const acme: Ev["model"] = ["acme", "CUE", "Builtin"];
      const random = randomSource(7);
      // Around the New York change to winter time (a 25-hour day), and across UTC midnights: a member's
      // events of one local day fall on two UTC days, and count once in that day's active members.
      const S = at("2024-11-02T00:00:00Z");
      const events = Array.from({ length: 300 }, () => ev(["1", "2", "3"][random(3)]!, S + random(4 * DAY), BigInt(1 + random(1000)),
        BigInt(random(10 ** 7)), [zeta, acme][random(2)]!));
      await write(t.token, events);
      const expected = (buckets: any[], only: readonly string[]) => buckets.map((b: any) => [zeta, acme].flatMap((model) => {
        const inBucket = events.filter((e) => e.model === model && only.includes(e.user_id) && e.ts >= b.start_time && e.ts < b.end_time);
        return inBucket.length === 0 ? [] : [{ ...EMPTY_KEYS, model_name: model[0], model_type: model[1], model_source: model[2], ...figuresOf(inBucket) }];
      }));
      for (const [zone, bucket, start, end] of [
        ["America/New_York", "day", at("2024-11-02T04:00:00Z"), at("2024-11-05T05:00:00Z")],
        ["UTC", "day", S + 7, S + 4 * DAY],
        ["UTC", "hour", S + 20 * HOUR + 59, S + 27 * HOUR],
        ["UTC", "day", S + 23 * HOUR + 1800, S + DAY + 23 * HOUR], // half an hour, then 23 hours: not whole hours
      ] as const) {
        for (const only of [["1", "2", "3"], ["1", "3"]]) {
          const data = await report(t.token, {
            start_time: start, end_time: end, time_zone: zone, bucket, group_by: ["model"], ...(only.length < 3 ? { user_ids: only } : {}),
          });
          expect(data.buckets.length).toBeGreaterThan(1);
          expect(data.buckets.map((b: any) => b.groups), `${zone} ${bucket} of ${only}`).toStrictEqual(expected(data.buckets, only));
        }
        // By member, the same buckets read raw as (member, model) pairs, a day of them a statement.
        const byMember = await report(t.token, { start_time: start, end_time: end, time_zone: zone, bucket, group_by: ["member"] });
        expect(byMember.buckets.map((b: any) => b.groups), `${zone} ${bucket} by member`).toStrictEqual(byMember.buckets.map((b: any) =>
          ["1", "2", "3"].flatMap((userId) => {
            const inBucket = events.filter((e) => e.user_id === userId && e.ts >= b.start_time && e.ts < b.end_time);
            return inBucket.length === 0 ? [] : [{ ...EMPTY_KEYS, user_id: userId, email: `u${userId}@example.com`, ...figuresOf(inBucket) }];
          })));
      }
    });

    it("only unknown members named: every bucket has one group of zeros", async () => {
      const t = await tenant({ departments: [], members: plainMembers(["1"]) });
      await write(t.token, [ev("1", 2 * DAY + 5)]);
      const data = await report(t.token, { start_time: 2 * DAY, end_time: 4 * DAY, user_ids: ["2"] });
      expect(data.buckets.map((b: any) => b.groups)).toStrictEqual([[{ ...EMPTY_KEYS, ...ZEROS }], [{ ...EMPTY_KEYS, ...ZEROS }]]);
      expect(data.not_found_user_ids).toStrictEqual(["2"]);
    });

    it("sums past 2^53 stay exact, tokens and micro-units", async () => {
      const t = await tenant({ departments: [], members: plainMembers(["1"]) });
      // 9,011 events at the per-event ceilings (odd values): each sum passes 2^53 and is odd, so any rounding shows.
      // Written by the ingestion just below the API (recordUsage): 10 REST batches would cost seconds.
      const top = 999_999_999_999n;
      const n = 9_011n;
      await recordUsage(new UsageRepository(svc.database), t.id, Array.from({ length: Number(n) }, (_, i) => ({
        where: `seed[${i}]`,
        event: {
          eventId: `big-${i}`, userId: "1", modelName: "atlas", modelType: "Chat", modelSource: "Builtin", timestamp: 10 * DAY + i,
          inputTokens: top, outputTokens: top, basicMicros: top, payGoMicros: top,
        },
      })));
      const data = await report(t.token, { start_time: 10 * DAY, end_time: 11 * DAY, time_zone: "UTC" });
      expect(n * top).toBeGreaterThan(2n ** 53n);
      expect(data.buckets[0].groups[0]).toStrictEqual({
        ...EMPTY_KEYS, events: Number(n), active_members: 1, input_tokens: n * top, output_tokens: n * top,
        basic_amount: sixDecimals(n * top), pay_go_amount: sixDecimals(n * top), total_amount: sixDecimals(2n * n * top),
      });
    });
  });

  // ---------------------------------------------------------------------------------------------
  describe("department subtrees", () => {
    // Corp (r) has children Alpha (a: a1, a2), Alpha (c, the same name: ordered by id after a) and
    // Beta (b: b1). m1 is in a1 and b1 (two sibling subtrees), m2 in a1 and a2 (one subtree twice),
    // m3 directly in the root, m4 in b, m5 in no department, m6 in c.
    const tree: Omit<DirectoryFile, "enterprise"> = {
      departments: [
        { department_id: "r", parent_department_id: "0", name: "Corp" },
        { department_id: "b", parent_department_id: "r", name: "Beta" },
        { department_id: "c", parent_department_id: "r", name: "Alpha" },
        { department_id: "a", parent_department_id: "r", name: "Alpha" },
        { department_id: "a1", parent_department_id: "a", name: "One" },
        { department_id: "a2", parent_department_id: "a", name: "Two" },
        { department_id: "b1", parent_department_id: "b", name: "Beta One" },
      ],
      members: [
        { user_id: "m1", email: "m1@example.com", account_type: 1, department_ids: ["a1", "b1"] },
        { user_id: "m2", email: "m2@example.com", account_type: 1, department_ids: ["a1", "a2"] },
        { user_id: "m3", email: "m3@example.com", account_type: 1, department_ids: ["r"] },
        { user_id: "m4", email: "m4@example.com", account_type: 1, department_ids: ["b"] },
        { user_id: "m5", email: "m5@example.com", account_type: 1, department_ids: [] },
        { user_id: "m6", email: "m6@example.com", account_type: 1, department_ids: ["c"] },
      ],
    };
    /** Which members each group covers, written out by hand from the tree above. */
    const subtree: Record<string, string[]> = {
      r: ["m3"], a: ["m1", "m2"], c: ["m6"], b: ["m1", "m4"], a1: ["m1", "m2"], a2: ["m2"],
    };
    const D0 = at("2024-05-01T00:00:00Z");
    let t: { id: string; token: string };
    let events: Ev[];

    beforeAll(async () => {
      t = await tenant(tree);
      const random = randomSource(7);
      events = Array.from({ length: 120 }, () =>
        ev(`m${1 + random(6)}`, D0 + random(3 * DAY), BigInt(1 + random(1000)), BigInt(random(5_000_000))));
      await write(t.token, events);
    });

    const inDays = (d: number) => events.filter((e) => e.ts >= D0 + d * DAY && e.ts < D0 + (d + 1) * DAY);
    const department = (id: string, name: string, dayEvents: Ev[]) =>
      ({ ...EMPTY_KEYS, department_id: id, department_name: name, ...figuresOf(dayEvents.filter((e) => subtree[id]!.includes(e.user_id))) });

    it("over 6,000 departments the subtree is found by seeks: no step of the report holds the thread for long (it scanned them all per department)", async () => {
      const wide = await tenant({
        departments: [{ department_id: "top", parent_department_id: "0", name: "Top" },
          ...Array.from({ length: 6000 }, (_, i) => ({ department_id: `d${i}`, parent_department_id: "top", name: `D${i}` }))],
        members: [{ user_id: "w1", email: "w1@example.com", account_type: 1, department_ids: ["d5999"] }],
      });
      await write(wide.token, [ev("w1", D0 + 3600, 5n)]);
      const { result: data, longestGap } = await withThreadGaps(() =>
        report(wide.token, { start_time: D0, end_time: D0 + DAY, time_zone: "UTC", bucket: "none", group_by: ["department"] }));
      expect(data.buckets[0].groups.map((g: any) => [g.department_id, g.events])).toStrictEqual([["d5999", 1]]);
      expect(longestGap).toBeLessThan(1000);
    }, 60_000);

    it("the department scopes kept in memory are told apart whatever the ids hold: enterprise \"x\\ny\" department \"z\" is not enterprise \"x\" department \"y\\nz\"", async () => {
      const tenantOf = async (enterpriseId: string, departmentId: string, userId: string) => {
        await importDirectory(svc.database, {
          enterprise: { enterprise_id: enterpriseId, name: "Newline", currency: "USD" },
          departments: [{ department_id: "top", parent_department_id: "0", name: "Top" }, { department_id: departmentId, parent_department_id: "top", name: "Child" }],
          members: [{ user_id: userId, email: `${userId}@example.com`, account_type: 1, department_ids: [departmentId] }],
        });
        return svc.token(undefined, enterpriseId);
      };
      const first = await tenantOf(`x-${dialect}\ny`, "z", "n1");
      const second = await tenantOf(`x-${dialect}`, "y\nz", "n2");
      await write(second, [ev("n2", D0 + 60, 3n)]);
      const body = { start_time: D0, end_time: D0 + DAY, time_zone: "UTC", bucket: "none", group_by: ["department"] };
      expect((await report(first, { ...body, department_id: "z" })).buckets[0].groups).toStrictEqual([]);
      const groups = (await report(second, { ...body, department_id: "y\nz" })).buckets[0].groups;
      expect(groups.map((g: any) => [g.department_id, g.events])).toStrictEqual([["y\nz", 1]]);
    });

    it("groups are the root itself (its direct members) then its children by name, then id; a member in two sibling subtrees counts in both", async () => {
      const data = await report(t.token, { start_time: D0, end_time: D0 + 3 * DAY, time_zone: "UTC", group_by: ["department"] });
      expect(data.buckets).toHaveLength(3);
      data.buckets.forEach((bucket: any, d: number) => {
        const expected = [department("r", "Corp", inDays(d)), department("a", "Alpha", inDays(d)), department("c", "Alpha", inDays(d)),
          department("b", "Beta", inDays(d))].filter((g) => g.events !== 0);
        expect(bucket.groups).toStrictEqual(expected);
      });
    });

    it("department_id limits to its subtree: groups are its children; a member in two of its departments counts once", async () => {
      const data = await report(t.token, { start_time: D0, end_time: D0 + 3 * DAY, time_zone: "UTC", group_by: ["department"], department_id: "a" });
      data.buckets.forEach((bucket: any, d: number) => {
        expect(bucket.groups).toStrictEqual([department("a1", "One", inDays(d)), department("a2", "Two", inDays(d))].filter((g) => g.events !== 0));
      });
      const total = await report(t.token, { start_time: D0, end_time: D0 + 3 * DAY, time_zone: "UTC", bucket: "none", department_id: "a" });
      expect(total.buckets[0].groups).toStrictEqual([{ ...EMPTY_KEYS, ...figuresOf(events.filter((e) => ["m1", "m2"].includes(e.user_id))) }]);
    });

    it("without a department, the total counts each member once, members without a department included", async () => {
      const data = await report(t.token, { start_time: D0, end_time: D0 + 3 * DAY, time_zone: "UTC", bucket: "none" });
      expect(data.buckets[0].groups).toStrictEqual([{ ...EMPTY_KEYS, ...figuresOf(events) }]);
      const root = await report(t.token, { start_time: D0, end_time: D0 + 3 * DAY, time_zone: "UTC", bucket: "none", department_id: "0" });
      expect(root.buckets[0].groups).toStrictEqual([{ ...EMPTY_KEYS, ...figuresOf(events.filter((e) => e.user_id !== "m5")) }]);
    });

    it('in an enterprise without departments, department_id "0" (the root) is an empty subtree, as "" is when grouping by department', async () => {
      const plain = await tenant({ departments: [], members: plainMembers(["1"]) });
      await write(plain.token, [ev("1", D0 + 5)]);
      const window = { start_time: D0, end_time: D0 + DAY, time_zone: "UTC" };
      const root = await report(plain.token, { ...window, department_id: "0" });
      expect(root.buckets[0].groups).toStrictEqual([{ ...EMPTY_KEYS, ...ZEROS }]);
      const byDepartment = await report(plain.token, { ...window, group_by: ["department"], department_id: "0" });
      expect(byDepartment.buckets[0].groups).toStrictEqual((await report(plain.token, { ...window, group_by: ["department"] })).buckets[0].groups);
      expect((await report(plain.token, window)).buckets[0].groups[0].events).toBe(1);
    });

    it("groups by department then model, whole days and a cut one alike, over the whole tree and a subtree", async () => {
      const two = await tenant(tree);
      const random = randomSource(11);
      const models: Array<Ev["model"]> = [CHAT, ["zephyr", "CUE", "Builtin"]];
      const modelEvents = Array.from({ length: 150 }, () =>
        ev(`m${1 + random(6)}`, D0 + random(3 * DAY), BigInt(1 + random(1000)), BigInt(random(5_000_000)), models[random(2)]!));
      await write(two.token, modelEvents);
      const start = D0 + 7 * HOUR + 5; // the first day cut: read raw; the other two whole
      const bucketEvents = [modelEvents.filter((e) => e.ts >= start && e.ts < D0 + DAY), ...[1, 2].map((d) =>
        modelEvents.filter((e) => e.ts >= D0 + d * DAY && e.ts < D0 + (d + 1) * DAY))];
      const groups = (departments: ReadonlyArray<readonly [string, string]>, inBucket: Ev[]) => departments.flatMap(([id, name]) => models.map((model) => ({
        ...EMPTY_KEYS, model_name: model[0], model_type: model[1], model_source: model[2], department_id: id, department_name: name,
        ...figuresOf(inBucket.filter((e) => e.model === model && subtree[id]!.includes(e.user_id))),
      }))).filter((g) => g.events !== 0);
      for (const [department_id, departments] of [["", [["r", "Corp"], ["a", "Alpha"], ["c", "Alpha"], ["b", "Beta"]]], ["a", [["a1", "One"], ["a2", "Two"]]]] as const) {
        const data = await report(two.token, { start_time: start, end_time: D0 + 3 * DAY, time_zone: "UTC", group_by: ["department", "model"], department_id });
        expect(data.buckets.map((b: any) => b.groups)).toStrictEqual(bucketEvents.map((inBucket) => groups(departments, inBucket)));
      }
    });

    it("groups by department then member", async () => {
      const data = await report(t.token, { start_time: D0, end_time: D0 + DAY, time_zone: "UTC", group_by: ["department", "member"], department_id: "b" });
      const expected = [["b", "Beta", "m4"], ["b1", "Beta One", "m1"]].map(([id, name, userId]) => ({
        ...EMPTY_KEYS, department_id: id, department_name: name, user_id: userId, email: `${userId}@example.com`,
        ...figuresOf(inDays(0).filter((e) => e.user_id === userId)),
      })).filter((g) => g.events !== 0);
      expect(data.buckets[0].groups).toStrictEqual(expected);
    });
  });

  // ---------------------------------------------------------------------------------------------
  describe("days kept between reports", () => {
    // The service keeps each day's figures by model and by department group once made; a report
    // after new events on those days, or after the directory moved a member, must see them.
    const D0 = at("2024-07-01T00:00:00Z");
    const OTHER: Ev["model"] = ["beacon", "CUE", "Builtin"];
    const members = (placement: Record<string, string>) => Object.entries(placement).map(([user_id, department]) =>
      ({ user_id, email: `${user_id}@example.com`, account_type: 1 as const, department_ids: [department] }));
    const departments = [
      { department_id: "r", parent_department_id: "0", name: "Corp" },
      { department_id: "x", parent_department_id: "r", name: "X" },
      { department_id: "y", parent_department_id: "r", name: "Y" },
    ];

    it("by department and by model (also by hour and in another zone), a report after more events on its days, and after a member moved department, has them", async () => {
      const placement: Record<string, string> = { k1: "x", k2: "x", k3: "y" };
      const t = await tenant({ departments, members: members(placement) });
      const random = randomSource(11);
      const events: Ev[] = [];
      const more = async (count: number, users: readonly string[], from = D0, seconds = 3 * DAY) => {
        const added = Array.from({ length: count }, () => ev(users[random(users.length)]!, from + random(seconds), BigInt(1 + random(100)),
          BigInt(random(1_000_000)), random(2) === 0 ? CHAT : OTHER));
        await write(t.token, added);
        events.push(...added);
      };
      const window = { start_time: D0, end_time: D0 + 3 * DAY, time_zone: "UTC" };
      const expectReports = async () => {
        const inDay = (d: number) => events.filter((e) => e.ts >= D0 + d * DAY && e.ts < D0 + (d + 1) * DAY);
        const byDepartment = (some: Ev[]) => ["x", "y"].map((id) => ({
          ...EMPTY_KEYS, department_id: id, department_name: id.toUpperCase(), ...figuresOf(some.filter((e) => placement[e.user_id] === id)),
        })).filter((g) => g.events !== 0);
        const byModel = (some: Ev[]) => [CHAT, OTHER].map((model) => ({
          ...EMPTY_KEYS, model_name: model[0], model_type: model[1], model_source: model[2], ...figuresOf(some.filter((e) => e.model === model)),
        })).filter((g) => g.events !== 0);
        const days = await report(t.token, { ...window, group_by: ["department"] });
        expect(days.buckets.map((b: any) => b.groups)).toStrictEqual([0, 1, 2].map((d) => byDepartment(inDay(d))));
        const whole = await report(t.token, { ...window, bucket: "none", group_by: ["department"] });
        expect(whole.buckets[0].groups).toStrictEqual(byDepartment(events));
        const models = await report(t.token, { ...window, group_by: ["model"] });
        expect(models.buckets.map((b: any) => b.groups)).toStrictEqual([0, 1, 2].map((d) => byModel(inDay(d))));
        const modelsWhole = await report(t.token, { ...window, bucket: "none", group_by: ["model"] });
        expect(modelsWhole.buckets[0].groups).toStrictEqual(byModel(events));
        // Buckets no rollup day fits (another zone's days, hours), by model and by department: read raw once, then kept.
        const inRange = (from: number, to: number) => events.filter((e) => e.ts >= from && e.ts < to);
        const kolkata = D0 + DAY - 19_800; // midnight in Asia/Kolkata (+05:30)
        const kolkataDays = [0, 1].map((d) => inRange(kolkata + d * DAY, kolkata + (d + 1) * DAY));
        const hourly = Array.from({ length: 12 }, (_, h) => inRange(D0 + DAY + h * HOUR, D0 + DAY + (h + 1) * HOUR));
        for (const [group_by, expected] of [["model", byModel], ["department", byDepartment]] as const) {
          const otherZone = await report(t.token, { start_time: kolkata, end_time: kolkata + 2 * DAY, time_zone: "Asia/Kolkata", group_by: [group_by] });
          expect(otherZone.buckets.map((b: any) => b.groups)).toStrictEqual(kolkataDays.map(expected));
          const hours = await report(t.token, { start_time: D0 + DAY, end_time: D0 + DAY + 12 * HOUR, bucket: "hour", group_by: [group_by] });
          expect(hours.buckets.map((b: any) => b.groups)).toStrictEqual(hourly.map(expected));
        }
      };

      await more(60, ["k1", "k2", "k3"]);
      await expectReports();
      await more(15, ["k2", "k3"]); // on the same days: the kept ones are made again
      await expectReports();
      await more(5, ["k1"], D0 + 2 * DAY, 6 * HOUR); // only in the later UTC day of the second Asia/Kolkata day
      await expectReports();
      placement.k2 = "y"; // a directory import moves k2 from X to Y
      await importDirectory(svc.database, { enterprise: { enterprise_id: t.id, name: "Moved", currency: "CNY" }, departments, members: members(placement) });
      await expectReports();
    });
  });

  // ---------------------------------------------------------------------------------------------
  describe("exactness and member pages", () => {
    const ids = ["1", "2", "10", "20", "3", "30", "4", "5"]; // "5" never has usage
    const models: Ev["model"][] = [["Zeta", "Chat", "Builtin"], ["acme", "CUE", "Builtin"], ["acme", "Chat", "Builtin"], ["local", "Chat", "Custom"]];
    const S0 = at("2024-02-01T00:00:00Z");
    let t: { id: string; token: string };
    let events: Ev[];

    beforeAll(async () => {
      t = await tenant({ departments: [], members: plainMembers(ids) });
      const random = randomSource(42);
      events = Array.from({ length: 600 }, () => {
        const model = models[random(models.length)]!;
        const charged = model[2] === "Builtin";
        return {
          user_id: ids[random(7)]!, model, ts: S0 + random(20 * DAY), input: BigInt(random(10 ** 9)), output: BigInt(random(10 ** 6)),
          basic: charged ? BigInt(random(10 ** 9)) : 0n, payGo: charged ? BigInt(random(3)) * 1_234_567n : 0n,
        };
      });
      await write(t.token, events);
    });

    it("for every member and random windows and zones, the buckets add up to user-model-usage to the micro-unit and token", async () => {
      const random = randomSource(3);
      const zones = ["UTC", "America/New_York", "Asia/Kathmandu", "Asia/Kolkata", "Pacific/Chatham"];
      for (let round = 0; round < 6; round++) {
        const start = S0 - DAY + random(8 * DAY);
        const end = start + 1 + random(14 * DAY);
        const bucket = ["day", "hour", "none"][round % 3]!;
        const zone = zones[random(zones.length)]!;
        const data = await report(t.token, { start_time: start, end_time: end, time_zone: zone, bucket, group_by: ["member", "model"] });
        const query = await call("POST", QUERY, t.token, { start_time: start, end_time: end, user_ids: ids });
        expect(query.status).toBe(200);
        for (const item of query.json.data.items) {
          const summed = new Map<string, { input: bigint; output: bigint; basic: bigint; payGo: bigint }>();
          for (const b of data.buckets) {
            for (const g of b.groups) {
              if (g.user_id !== item.user_id) continue;
              const key = `${g.model_name}/${g.model_type}/${g.model_source}`;
              const s = summed.get(key) ?? { input: 0n, output: 0n, basic: 0n, payGo: 0n };
              s.input += BigInt(g.input_tokens);
              s.output += BigInt(g.output_tokens);
              s.basic += BigInt(g.basic_amount.replace(".", ""));
              s.payGo += BigInt(g.pay_go_amount.replace(".", ""));
              summed.set(key, s);
            }
          }
          const fromReport = [...summed].sort(([a], [b]) => byCodePoint(a, b)).map(([key, s]) => ({ key, ...s }));
          const fromQuery = item.model_usage.map((u: any) => ({
            key: `${u.model_name}/${u.model_type}/${u.model_source}`, input: BigInt(u.usage.input_tokens), output: BigInt(u.usage.output_tokens),
            basic: BigInt(u.amount.basic_amount.replace(".", "")), payGo: BigInt(u.amount.pay_go_amount.replace(".", "")),
          })).sort((a: any, b: any) => byCodePoint(a.key, b.key));
          expect(fromReport, `member ${item.user_id}, window ${start}..${end}, ${bucket} in ${zone}`).toStrictEqual(fromQuery);
        }
      }
    });

    it("member pages: sorted by user_id in code point order, only members with usage; all pages together are the unpaged answer", async () => {
      const body = { start_time: S0, end_time: S0 + 20 * DAY, time_zone: "UTC", group_by: ["member"] };
      const whole = await report(t.token, body);
      expect(whole.next_page_token).toBe("");
      const active = ["1", "10", "2", "20", "3", "30", "4"];
      const userIdsOf = (data: any): string[] => [...new Set<string>(data.buckets.flatMap((b: any) => b.groups.map((g: any) => g.user_id)))].sort(byCodePoint);
      expect(userIdsOf(whole)).toStrictEqual(active);
      expect(whole.buckets[0].groups.map((g: any) => g.user_id)).toStrictEqual([...whole.buckets[0].groups.map((g: any) => g.user_id)].sort(byCodePoint));

      const pages: any[] = [];
      let token = "";
      do {
        const page = await report(t.token, { ...body, page_size: 3, page_token: token });
        pages.push(page);
        token = page.next_page_token;
      } while (token !== "" && pages.length < 10);
      expect(pages).toHaveLength(3);
      expect(pages.map(userIdsOf)).toStrictEqual([["1", "10", "2"], ["20", "3", "30"], ["4"]]);
      const joined = whole.buckets.map((b: any, i: number) => ({ ...b, groups: pages.flatMap((p) => p.buckets[i].groups) }));
      expect(joined).toStrictEqual(whole.buckets);

      // A token works only with the query that made it.
      const second = await report(t.token, { ...body, page_size: 3 });
      await expectInvalid(await call("POST", REPORT, t.token, { ...body, time_zone: "Asia/Kolkata", page_token: second.next_page_token }), "page_token");
    });

    it("a page token holds the zone its report used: the enterprise's zone named or by default is one query; after the zone changes, another", async () => {
      const members = plainMembers(["1", "2"]);
      const other = await tenant({ time_zone: "Asia/Shanghai", departments: [], members });
      await write(other.token, [ev("1", S0 + HOUR), ev("2", S0 + HOUR)]);
      const body = { start_time: S0, end_time: S0 + 2 * DAY, group_by: ["member"], page_size: 1 };
      const first = await report(other.token, body);
      expect(first.time_zone).toBe("Asia/Shanghai");
      const named = await report(other.token, { ...body, time_zone: "Asia/Shanghai", page_token: first.next_page_token });
      expect(named.buckets.flatMap((b: any) => b.groups.map((g: any) => g.user_id))).toContain("2");
      // The same zone in other capitals or by an alias is the same query (it was 4001), and its name is answered as given.
      for (const spelled of ["asia/shanghai", "PRC", "Asia/Chongqing"]) {
        const again = await report(other.token, { ...body, time_zone: spelled, page_token: first.next_page_token });
        expect([again.time_zone, again.buckets.flatMap((b: any) => b.groups.map((g: any) => g.user_id))], spelled).toStrictEqual([spelled, ["2"]]);
        const fromSpelled = await report(other.token, { ...body, time_zone: spelled });
        expect((await report(other.token, { ...body, page_token: fromSpelled.next_page_token })).buckets[0].groups[0].user_id, spelled).toBe("2");
      }
      await importDirectory(svc.database, { enterprise: { enterprise_id: other.id, name: "Moved", currency: "CNY", time_zone: "America/New_York" }, departments: [], members });
      await expectInvalid(await call("POST", REPORT, other.token, { ...body, page_token: first.next_page_token }), "page_token");
    });
  });

  // ---------------------------------------------------------------------------------------------
  describe("core metrics", () => {
    it("one item per local day in the enterprise's zone by default, empty days included, as the report's day buckets", async () => {
      const t = await tenant({ time_zone: "Asia/Kathmandu", departments: [], members: plainMembers(["1", "2"]) });
      const events = [
        ev("1", at("2024-10-27T18:14:59Z"), 1n, 10n), ev("2", at("2024-10-27T18:15:00Z"), 2n, 20n),
        ev("1", at("2024-10-28T10:00:00Z"), 4n, 40n), ev("1", at("2024-10-30T18:14:59Z"), 8n, 80n),
      ];
      await write(t.token, events);
      const reply = await coreMetrics(t.token, { start_date: "2024-10-27", end_date: "2024-10-31" });
      expect(reply.status).toBe(200);
      const item = (date: string, dayEvents: Ev[]) => {
        const { events: n, active_members, input_tokens, output_tokens, basic_amount, pay_go_amount, total_amount } = figuresOf(dayEvents);
        return { date, active_members, events: n, input_tokens, output_tokens, basic_amount, pay_go_amount, total_amount };
      };
      expect(reply.json.data).toStrictEqual({
        currency: "CNY", time_zone: "Asia/Kathmandu",
        items: [
          item("2024-10-27", events.slice(0, 1)), item("2024-10-28", events.slice(1, 3)), item("2024-10-29", []),
          item("2024-10-30", events.slice(3)), item("2024-10-31", []),
        ],
      });
      const utc = await coreMetrics(t.token, { start_date: "2024-10-27", end_date: "2024-10-28", time_zone: "UTC" });
      expect(utc.json.data.items.map((i: any) => [i.date, i.events])).toStrictEqual([["2024-10-27", 2], ["2024-10-28", 1]]);
    });

    it("a date with two midnights (the clock falls back to 00:00: America/Havana, Atlantic/Azores) begins at the first, none of its events lost; no day bucket runs backwards (Moncton)", async () => {
      for (const [zone, first, second] of [["America/Havana", at("2024-11-03T04:00:00Z"), at("2024-11-03T05:00:00Z")], ["Atlantic/Azores", at("2023-10-29T00:00:00Z"), at("2023-10-29T01:00:00Z")]] as const) {
        // The enterprise's zone, so its days are kept as rollup rows too; events in the first hour, after the second midnight, at noon.
        const t = await tenant({ time_zone: zone, departments: [], members: plainMembers(["1", "2"]) });
        const events = [ev("1", first + 1800, 1n), ev("2", second + 1800, 2n), ev("2", second + 12 * HOUR, 4n)];
        await write(t.token, events);
        const date = zone === "America/Havana" ? "2024-11-03" : "2023-10-29";
        for (const [start_date, end_date] of [[date, date], ["2023-10-28", "2023-10-30"], ["2024-11-02", "2024-11-04"]]) {
          const items = (await coreMetrics(t.token, { start_date, end_date })).json.data.items.filter((i: any) => i.date === date);
          if (start_date <= date && date <= end_date) expect(items.map((i: any) => [i.events, i.input_tokens]), `${zone} ${start_date}..${end_date}`).toStrictEqual([[3, 7]]);
        }
        const days = await report(t.token, { start_time: first - DAY, end_time: first + 2 * DAY, bucket: "day" });
        const day = days.buckets.find((b: any) => b.date === date);
        expect([day.start_time, day.end_time - day.start_time, day.groups[0].events], zone).toStrictEqual([first, 25 * HOUR, 3]);
        // A window from the second midnight holds what came after it, whichever day rows hold it.
        const late = await report(t.token, { start_time: second, end_time: first + DAY + HOUR, bucket: "none", group_by: ["member"] });
        expect(late.buckets[0].groups.map((g: any) => [g.user_id, g.events]), zone).toStrictEqual([["2", 2]]);
      }
      // Where the clock fell back from 00:01 to 23:01 of the day before (America/Moncton, 1993-10-31), a window starting in the repeated
      // minutes has no day bucket that ends before it begins.
      const t = await tenant({ departments: [], members: plainMembers(["1"]) });
      const days = await report(t.token, { start_time: 752_036_460, end_time: 752_122_860, bucket: "day", time_zone: "America/Moncton" });
      expect(days.buckets.map((b: any) => b.start_time < b.end_time)).not.toContain(false);
      expect([days.buckets[0].start_time, days.buckets.at(-1).end_time]).toStrictEqual([752_036_460, 752_122_860]);
    });

    it("a date the zone skipped has no item: Samoa went from 2011-12-29 to 2011-12-31", async () => {
      const t = await tenant({ departments: [], members: plainMembers(["1"]) });
      const dates = async (start_date: string, end_date: string) => {
        const reply = await coreMetrics(t.token, { start_date, end_date, time_zone: "Pacific/Apia" });
        expect(reply.status).toBe(200);
        return reply.json.data.items.map((item: { date: string }) => item.date);
      };
      expect(await dates("2011-12-30", "2011-12-30")).toStrictEqual([]);
      expect(await dates("2011-12-29", "2011-12-30")).toStrictEqual(["2011-12-29"]);
      expect(await dates("2011-12-30", "2011-12-31")).toStrictEqual(["2011-12-31"]);
      expect(await dates("2011-12-28", "2012-01-01")).toStrictEqual(["2011-12-28", "2011-12-29", "2011-12-31", "2012-01-01"]);
    });

    it("a range of 366 days is accepted, 367 is 4001 naming the dates; end before start, bad dates and zones are 4001 naming the field", async () => {
      const t = await tenant({ departments: [], members: plainMembers(["1"]) });
      const year = await coreMetrics(t.token, { start_date: "2024-01-01", end_date: "2024-12-31", time_zone: "America/New_York" });
      expect(year.status).toBe(200);
      expect(year.json.data.items).toHaveLength(366);
      await expectInvalid(await coreMetrics(t.token, { start_date: "2024-01-01", end_date: "2025-01-01" }), "start_date", "end_date", "367", "366");
      await expectInvalid(await coreMetrics(t.token, { start_date: "2024-01-02", end_date: "2024-01-01" }), "end_date");
      await expectInvalid(await coreMetrics(t.token, { start_date: "2024-02-30", end_date: "2024-03-01" }), "start_date");
      await expectInvalid(await coreMetrics(t.token, { start_date: "2024-1-1", end_date: "2024-03-01" }), "start_date");
      await expectInvalid(await coreMetrics(t.token, { end_date: "2024-03-01" }), "start_date: value is required");
      await expectInvalid(await coreMetrics(t.token, { start_date: "2024-03-01" }), "end_date: value is required");
      await expectInvalid(await coreMetrics(t.token, { start_date: "2024-01-01", end_date: "2024-01-02", time_zone: "Mars/Olympus" }), "time_zone");
    });
  });

  // ---------------------------------------------------------------------------------------------
  describe("limits, permission, transports", () => {
    let t: { id: string; token: string };
    beforeAll(async () => {
      t = await tenant({ departments: [{ department_id: "r", parent_department_id: "0", name: "Corp" }], members: plainMembers(["1"]) });
    });

    it("each limit is 4001 naming its field", async () => {
      const ok = { start_time: 0, end_time: DAY };
      const bad = (over: Record<string, unknown>) => call("POST", REPORT, t.token, { ...ok, ...over });
      await expectInvalid(await bad({ end_time: 0 }), "end_time");
      await expectInvalid(await bad({ start_time: DAY, end_time: DAY }), "end_time", "start_time");
      await expectInvalid(await bad({ end_time: 366 * DAY + 1 }), "end_time - start_time", "366 days");
      expect((await bad({ end_time: 366 * DAY })).status).toBe(200);
      await expectInvalid(await bad({ end_time: 31 * DAY + 1, bucket: "hour" }), "end_time - start_time", "31 days");
      expect((await bad({ end_time: 31 * DAY, bucket: "hour" })).status).toBe(200);
      await expectInvalid(await bad({ time_zone: "Europe/Atlantis" }), "time_zone");
      await expectInvalid(await bad({ bucket: "week" }), "bucket");
      await expectInvalid(await bad({ group_by: ["team"] }), "group_by");
      await expectInvalid(await bad({ group_by: ["model", "model"] }), "group_by");
      await expectInvalid(await bad({ department_id: "nope" }), "department_id", "nope");
      await expectInvalid(await bad({ user_ids: Array.from({ length: 60 }, (_, i) => `u${i}`), emails: Array.from({ length: 41 }, (_, i) => `e${i}@x.example`) }),
        "user_ids plus emails", "101 > 100");
      await expectInvalid(await bad({ group_by: ["member"], page_size: 1001 }), "page_size");
      await expectInvalid(await bad({ group_by: ["member"], page_token: "garbage" }), "page_token");
      await expectInvalid(await bad({ page_token: "garbage" }), "page_token", "member");
      // Events end with the year 9999: a window may end there, not later (JavaScript's dates end near 8.64e12).
      await expectInvalid(await bad({ start_time: 8_640_000_000_000, end_time: 8_640_000_086_400 }), "end_time", "253402300800");
      await expectInvalid(await bad({ start_time: 253_402_300_800, end_time: 253_402_300_801, bucket: "none" }), "end_time", "253402300800");
      await expectInvalid(await bad({ start_time: "9223372036854775000", end_time: "9223372036854775807" }), "end_time", "253402300800");
      const lastDay = await bad({ start_time: 253_402_214_400, end_time: 253_402_300_800, time_zone: "UTC" });
      expect([lastDay.status, lastDay.json.data.buckets.map((b: { date: string }) => b.date)]).toEqual([200, ["9999-12-31"]]);
      // Kiritimati (+14) is in 10000-01-01 by then: no date to give that day.
      await expectInvalid(await bad({ start_time: 253_402_214_400, end_time: 253_402_300_800, time_zone: "Pacific/Kiritimati" }),
        "end_time", "local date past 9999-12-31");
    });

    it("a token without statistics:read gets 403 with 30017 on both routes", async () => {
      const token = await svc.token(["departments:read", "usage:write"], t.id);
      for (const reply of [await call("POST", REPORT, token, { start_time: 0, end_time: DAY }),
        await coreMetrics(token, { start_date: "2024-01-01", end_date: "2024-01-02" })]) {
        expect(reply.json).toMatchObject({ code: 30017, data: null });
        expect(reply.status).toBe(403);
      }
    });

    it("Connect JSON and gRPC give the REST answer; their errors carry the same code", async () => {
      await write(t.token, [ev("1", 5 * DAY + 7, 9n, 123n)]);
      const body = { start_time: 4 * DAY, end_time: 7 * DAY, time_zone: "UTC", group_by: ["model"] };
      const rest = await report(t.token, body);
      const headers = { authorization: `Bearer ${t.token}` };
      const request = { startTime: BigInt(body.start_time), endTime: BigInt(body.end_time), timeZone: "UTC", groupBy: ["model"] };
      for (const transport of [
        createConnectTransport({ baseUrl: svc.baseUrl, httpVersion: "1.1", useBinaryFormat: false }),
        createGrpcTransport({ baseUrl: svc.baseUrl }),
      ]) {
        const client = createClient(UsageService, transport);
        const answer = await client.getUsageReport(request, { headers });
        expect(answer.buckets.map((b) => ({
          start_time: Number(b.startTime), end_time: Number(b.endTime), date: b.date,
          groups: b.groups.map((g) => ({
            model_name: g.modelName, model_type: g.modelType, model_source: g.modelSource, user_id: g.userId, email: g.email,
            department_id: g.departmentId, department_name: g.departmentName, former_member: g.formerMember, events: Number(g.events), active_members: Number(g.activeMembers),
            input_tokens: Number(g.inputTokens), output_tokens: Number(g.outputTokens),
            basic_amount: g.basicAmount, pay_go_amount: g.payGoAmount, total_amount: g.totalAmount,
          })),
        }))).toStrictEqual(rest.buckets);
        const metrics = await client.getCoreMetrics({ startDate: "1970-01-05", endDate: "1970-01-07", timeZone: "UTC" }, { headers });
        expect(metrics.items.map((i) => [i.date, Number(i.events), i.basicAmount])).toStrictEqual([
          ["1970-01-05", 0, "0.000000"], ["1970-01-06", 1, "0.000123"], ["1970-01-07", 0, "0.000000"],
        ]);
        const failure = await client.getUsageReport({ ...request, timeZone: "Nowhere/Special" }, { headers }).catch((e) => e);
        expect(failure).toBeInstanceOf(ConnectError);
        expect((failure as ConnectError).code).toBe(Code.InvalidArgument);
        expect((failure as ConnectError).rawMessage).toContain("time_zone");
      }
    });
  });
});
