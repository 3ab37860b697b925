// End to end: a usage report's answer holds at most REPORT_MAX_FIGURES (bucket, group) figures, set
// here to its least, 1,000. A member page holds the members that fit (at most page_size) and its token
// goes on after the last of them; any other report past the bound, or a member alone past it, is 4001
// naming the bound, on every transport, and the daily trend is not bounded. Without the bound one
// report of members by model over a year answered hundreds of MB and held the server for minutes.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UsageService } from "../../gen/enterprise_admin/v1/usage_pb.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { dialects } from "../helpers/databases.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { byCodePoint, parseJsonBig } from "../helpers/usage-reference.js";

const REPORT = "/openapi/v1/statistics/usage-report";
const CORE_METRICS = "/openapi/v1/statistics/core-metrics";
const RECORD = "/openapi/v1/usage/events/batch-record";
const DAY = 86_400;
const S0 = Date.parse("2025-03-01T00:00:00Z") / 1000;
const MAX_FIGURES = 1_000;
/** 30 members, each with one event a day for 40 days: 1,200 (day, member) figures. */
const MEMBERS = Array.from({ length: 30 }, (_, i) => `m${String(i).padStart(2, "0")}`);
const DAYS = 40;

describe.each(dialects)("usage report size bound (%s)", (dialect) => {
  let svc: TestService;
  let token: string;

  async function call(method: "GET" | "POST", path: string, body?: unknown): Promise<{ status: number; json: any }> {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(svc.baseUrl + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, json: parseJsonBig(await res.text()) };
  }

  const figureCount = (data: any) => data.buckets.reduce((n: number, b: any) => n + b.groups.length, 0);
  const userIdsOf = (data: any): string[] => [...new Set<string>(data.buckets.flatMap((b: any) => b.groups.map((g: any) => g.user_id)))].sort(byCodePoint);

  beforeAll(async () => {
    svc = await startTestService(dialect, { REPORT_MAX_FIGURES: String(MAX_FIGURES) });
    await importDirectory(svc.database, {
      enterprise: { enterprise_id: "bounded", name: "Bounded", currency: "USD" },
      departments: [],
      members: MEMBERS.map((user_id) => ({ user_id, email: `${user_id}@example.com`, account_type: 1 as const, department_ids: [] })),
    });
    token = await svc.token(undefined, "bounded");
    const events: object[] = [];
    for (const [m, userId] of MEMBERS.entries()) {
      for (let day = 0; day < DAYS; day++) {
        events.push({ event_id: `${userId}-${day}`, user_id: userId, model_name: `k${day % 30}`, model_type: "Chat", model_source: "Builtin",
          timestamp: S0 + day * DAY + 3600 + m, input_tokens: 10, output_tokens: 1, basic_amount: "0.000001", pay_go_amount: "0.000000" });
      }
    }
    // m00 also has two models every hour of the first 31 days: 1,488 (hour, model) figures of its own.
    for (let hour = 0; hour < 31 * 24; hour++) {
      for (const model of ["h1", "h2"]) {
        events.push({ event_id: `m00-${model}-${hour}`, user_id: "m00", model_name: model, model_type: "Chat", model_source: "Builtin",
          timestamp: S0 + hour * 3600 + 60, input_tokens: 1, output_tokens: 1, basic_amount: "0.000000", pay_go_amount: "0.000000" });
      }
    }
    for (let i = 0; i < events.length; i += 1000) {
      const reply = await call("POST", RECORD, { events: events.slice(i, i + 1000) });
      expect(reply.status, JSON.stringify(reply.json)).toBe(200);
    }
  });

  afterAll(async () => {
    await svc?.close();
  });

  it("a member page holds the members whose figures fit, at most page_size; its token goes on after the last; the pages add up to every member", async () => {
    const body = { start_time: S0, end_time: S0 + DAYS * DAY, time_zone: "UTC", bucket: "day", group_by: ["member"] };
    const pages: any[] = [];
    let pageToken = "";
    do {
      const reply = await call("POST", REPORT, { ...body, page_size: 1000, page_token: pageToken });
      expect(reply.json.code, reply.json.message).toBe(0);
      pages.push(reply.json.data);
      pageToken = reply.json.data.next_page_token;
    } while (pageToken !== "" && pages.length < 10);

    // m00 has 40 days (its hours are inside them), every other member 40: 25 members a page (1,000 figures), then 5.
    expect(pages.map(figureCount)).toStrictEqual([1000, 200]);
    expect(pages.map((p) => userIdsOf(p).length)).toStrictEqual([25, 5]);
    expect(pages.flatMap(userIdsOf)).toStrictEqual(MEMBERS);
    for (const page of pages) {
      for (const bucket of page.buckets) {
        for (const group of bucket.groups) {
          const events = group.user_id === "m00" && bucket.start_time < S0 + 31 * DAY ? 1 + 2 * 24 : 1;
          expect(group.events, `${group.user_id} on ${bucket.date}`).toBe(events);
        }
      }
    }
    // A smaller page_size still decides when it is the tighter bound.
    const small = await call("POST", REPORT, { ...body, page_size: 7 });
    expect(userIdsOf(small.json.data)).toStrictEqual(MEMBERS.slice(0, 7));
  });

  it("by member and model, a page ends at the last member whose figures fit, counted once they are made", async () => {
    const body = { start_time: S0, end_time: S0 + DAYS * DAY, time_zone: "UTC", bucket: "day", group_by: ["member", "model"], page_size: 1000 };
    const first = (await call("POST", REPORT, body)).json.data;
    const second = (await call("POST", REPORT, { ...body, page_token: first.next_page_token })).json.data;
    // m00: three models on each of 31 days and one on 9, 102 figures; then 40 a member: 22 more fit in 1,000.
    expect([first, second].map(figureCount)).toStrictEqual([102 + 22 * 40, 7 * 40]);
    expect([first, second].map(userIdsOf)).toStrictEqual([MEMBERS.slice(0, 23), MEMBERS.slice(23)]);
    expect(second.next_page_token).toBe("");
  });

  it("any other report past the bound is 4001 naming it, over REST and gRPC; the daily trend and a report within the bound answer", async () => {
    const body = { start_time: S0, end_time: S0 + 31 * DAY, time_zone: "UTC", bucket: "hour", group_by: ["model"] };
    const refused = await call("POST", REPORT, body);
    expect(refused.status).toBe(400);
    expect(refused.json.code).toBe(4001);
    expect(refused.json.message).toContain("1,000");
    expect(refused.json.message).toContain("figures");
    // What to ask instead is what a report of hours can do (it told a report of days to use bucket "day").
    expect(refused.json.message).toContain('a coarser bucket: "day" rather than "hour", "none" for one over the window');

    const client = createClient(UsageService, createGrpcTransport({ baseUrl: svc.baseUrl }));
    const failure = await client.getUsageReport({ startTime: BigInt(body.start_time), endTime: BigInt(body.end_time), timeZone: "UTC", bucket: "hour", groupBy: ["model"] },
      { headers: { authorization: `Bearer ${token}` } }).catch((e) => e);
    expect(failure).toBeInstanceOf(ConnectError);
    expect((failure as ConnectError).code).toBe(Code.InvalidArgument);
    expect((failure as ConnectError).rawMessage).toBe(refused.json.message);

    const within = await call("POST", REPORT, { ...body, end_time: S0 + 10 * DAY }); // 490 figures
    expect(within.json.code, within.json.message).toBe(0);
    const trend = await call("GET", `${CORE_METRICS}?start_date=2024-06-01&end_date=2025-05-31&time_zone=UTC`);
    expect(trend.json.code, trend.json.message).toBe(0);
    expect(trend.json.data.items).toHaveLength(365);
  });

  it("a member alone past the bound is 4001 saying so", async () => {
    const reply = await call("POST", REPORT, { start_time: S0, end_time: S0 + 31 * DAY, time_zone: "UTC", bucket: "hour", group_by: ["member", "model"], page_size: 1 });
    expect(reply.status).toBe(400);
    expect(reply.json.code).toBe(4001);
    expect(reply.json.message).toContain('"m00"');
    expect(reply.json.message).toContain("1,000");
  });
});
