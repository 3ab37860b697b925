// End to end, over the real port: a member removed by `import directory --prune` keeps its usage
// history, queryable by user_id and marked former_member in user-model-usage, the usage report and
// the export; its e-mail no longer matches; its removed departments are gone from every department
// lookup; a later file that names it restores it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DirectoryFile } from "../../src/domain/directory-file.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { dialects } from "../helpers/databases.js";
import { acme } from "../helpers/fixtures.js";
import { startTestService, type TestService } from "../helpers/service.js";

const DAY = 1_740_787_200; // 2025-03-01T00:00:00Z
const WINDOW = { start_time: DAY, end_time: DAY + 86_400 };
/** acme without Sales (120, 121) and without 7002, who sat there. */
const acmeWithoutSales: DirectoryFile = {
  ...acme,
  departments: acme.departments.filter((d) => !["120", "121"].includes(d.department_id)),
  members: acme.members.filter((m) => m.user_id !== "7002"),
};
const event = (eventId: string, userId: string, offset: number, basic: string) => ({
  event_id: eventId, user_id: userId, model_name: "model-a", model_type: "Chat", model_source: "Builtin",
  timestamp: DAY + offset, input_tokens: 100, output_tokens: 10, basic_amount: basic, pay_go_amount: "0.000000",
});

describe.each(dialects)("former members on %s", (dialect) => {
  let svc: TestService;
  let token: string;

  async function call(method: "GET" | "POST", path: string, body?: unknown) {
    const res = await fetch(svc.baseUrl + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, text, json: res.headers.get("content-type")?.startsWith("application/json") ? JSON.parse(text) : undefined };
  }
  const data = async (method: "GET" | "POST", path: string, body?: unknown) => {
    const reply = await call(method, path, body);
    expect(reply.status, reply.text).toBe(200);
    return reply.json.data;
  };
  const usageOf = (body: object) => data("POST", "/openapi/v1/statistics/user-model-usage", { ...WINDOW, ...body });

  beforeAll(async () => {
    svc = await startTestService(dialect);
    token = await svc.token();
    expect(await data("POST", "/openapi/v1/usage/events/batch-record", {
      events: [event("e-1", "7001", 60, "1.000000"), event("e-2", "7002", 120, "2.500000"), event("e-3", "7002", 180, "0.250000")],
    })).toStrictEqual({ recorded: 3, duplicates: 0 });
    await importDirectory(svc.database, acmeWithoutSales, { prune: true });
  });
  afterAll(async () => svc?.close());

  it("user-model-usage by user_id still answers for a former member, marked former_member, with its whole history", async () => {
    const answer = await usageOf({ user_ids: ["7002", "7001"] });
    expect(answer.items.map((i: { user_id: string; former_member: boolean }) => [i.user_id, i.former_member])).toStrictEqual([["7002", true], ["7001", false]]);
    expect(answer.items[0]).toStrictEqual({
      user_id: "7002", email: "Han.Meimei@acme.example", account_type: 2, former_member: true,
      model_usage: [{
        model_name: "model-a", model_type: "Chat", model_source: "Builtin", usage: { input_tokens: 200, output_tokens: 20 },
        amount: { basic_amount: "2.750000", pay_go_amount: "0.000000", total_amount: "2.750000", currency: "CNY" },
      }],
    });
    expect(answer.not_found_user_ids).toStrictEqual([]);
  });

  it("a former member's e-mail no longer matches: it is listed as not found", async () => {
    const answer = await usageOf({ emails: ["han.meimei@ACME.example", "li.lei@acme.example"] });
    expect(answer.items.map((i: { user_id: string }) => i.user_id)).toStrictEqual(["7001"]);
    expect(answer.not_found_emails).toStrictEqual(["han.meimei@ACME.example"]);
  });

  it("the usage report grouped by member marks the former member; the enterprise's totals still count its spend", async () => {
    const report = await data("POST", "/openapi/v1/statistics/usage-report", { ...WINDOW, bucket: "none", group_by: ["member"] });
    const groups = report.buckets[0].groups.map((g: { user_id: string; former_member: boolean; total_amount: string }) => [g.user_id, g.former_member, g.total_amount]);
    expect(groups).toStrictEqual([["7001", false, "1.000000"], ["7002", true, "2.750000"]]);
    const whole = await data("POST", "/openapi/v1/statistics/usage-report", { ...WINDOW, bucket: "none" });
    expect(whole.buckets[0].groups[0]).toMatchObject({ events: 3, total_amount: "3.750000", former_member: false });
  });

  it("the export's rows mark the former member, who has no department any more", async () => {
    const reply = await call("GET", `/openapi/v1/statistics/usage-export?start_time=${WINDOW.start_time}&end_time=${WINDOW.end_time}&time_zone=UTC&format=ndjson`);
    expect(reply.status).toBe(200);
    const rows = reply.text.trim().split("\n").map((line) => JSON.parse(line));
    expect(rows.map((r) => [r.user_id, r.former_member, r.department_paths])).toStrictEqual([
      ["7001", false, ["Acme Corp/Engineering/Platform"]],
      ["7002", true, []],
    ]);
  });

  it("removed departments are gone from batch-get, children and search", async () => {
    const batch = await data("POST", "/openapi/v1/departments/batch-get", { department_ids: ["120", "121", "110"] });
    expect(batch.items.map((d: { department_id: string }) => d.department_id)).toStrictEqual(["110"]);
    expect(batch.not_found_department_ids).toStrictEqual(["120", "121"]);
    const children = await data("GET", "/openapi/v1/departments/100/children");
    expect(children.items.map((d: { department_id: string }) => d.department_id)).toStrictEqual(["110"]);
    const search = await data("GET", "/openapi/v1/departments/search?keyword=sales");
    expect(search.items).toStrictEqual([]);
  });

  it("a late event of a former member is still recorded and counts in its history", async () => {
    expect(await data("POST", "/openapi/v1/usage/events/batch-record", { events: [event("e-4", "7002", 240, "0.000001")] }))
      .toStrictEqual({ recorded: 1, duplicates: 0 });
    const answer = await usageOf({ user_ids: ["7002"] });
    expect(answer.items[0].model_usage[0].amount.basic_amount).toBe("2.750001");
  });

  it("a later file that names the former member restores it: current again, its e-mail matches, its history whole", async () => {
    const summary = await importDirectory(svc.database, acme);
    expect(summary.restored_members).toStrictEqual([{ user_id: "7002", email: "Han.Meimei@acme.example" }]);
    const answer = await usageOf({ emails: ["han.meimei@acme.example"] });
    expect(answer.not_found_emails).toStrictEqual([]);
    expect(answer.items).toMatchObject([{ user_id: "7002", former_member: false, model_usage: [{ usage: { input_tokens: 300 } }] }]);
  });
});
