// End to end: the usage export (GET /openapi/v1/statistics/usage-export, UsageService.ExportUsage over
// Connect and gRPC, and `export usage` of the real CLI) against the real service. Expected rows are
// computed here from the events sent, with the platform's Intl time zone data for the local dates
// (the service uses luxon), and checked against user-model-usage over the same window.
import { execFileSync } from "node:child_process";
import http from "node:http";
import { chmodSync, existsSync, lstatSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { parse as parseCsv } from "csv-parse/sync";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { UsageExportRowSchema, UsageService } from "../../gen/enterprise_admin/v1/usage_pb.js";
import { checkUsageEvent } from "../../src/domain/usage-event.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { recordUsage } from "../../src/operations/record-usage.js";
import { UsageRepository } from "../../src/storage/usage-repository.js";
import { cli, cliChild } from "../helpers/cli.js";
import { dialects } from "../helpers/databases.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { byCodePoint, parseJsonBig, sixDecimals } from "../helpers/usage-reference.js";
import { scratchFolder } from "../helpers/scratch-folder.js";

const EXPORT = "/openapi/v1/statistics/usage-export";
const QUERY = "/openapi/v1/statistics/user-model-usage";
const KATHMANDU = "Asia/Kathmandu"; // +05:45, no daylight saving
/** Local midnight of a date in Kathmandu, as Unix seconds. */
const ktm = (date: string) => Date.parse(`${date}T00:00:00Z`) / 1000 - (5 * 3600 + 45 * 60);
/** Dates 2025-03-01 to 2025-03-20, whole local days in Kathmandu. */
const WINDOW = { start: ktm("2025-03-01"), end: ktm("2025-03-21") };
const COLUMNS = ["date", "user_id", "email", "department_paths", "model_name", "model_type", "model_source", "events",
  "input_tokens", "output_tokens", "basic_amount", "pay_go_amount", "total_amount", "currency", "former_member"];

interface SentEvent {
  user_id: string;
  model: [name: string, type: "Chat" | "CUE", source: "Builtin" | "Custom"];
  timestamp: number;
  input: number;
  output: number;
  basic: bigint;
  payGo: bigint;
}

/** The members of the main tenant: user_ids that sort "10" < "100" < "9", paths with commas and quotes. */
const MEMBERS = [
  { user_id: "9", email: "o'hara@exp.example", department_ids: ["110", "121"] },
  { user_id: "10", email: "lee@exp.example", department_ids: ["111"] },
  { user_id: "100", email: "kim@exp.example", department_ids: [] },
];
const PATHS: Record<string, string[]> = {
  "9": ["Exp, Inc./R&D, \"Skunk\" Works", "Exp, Inc./Sales"].sort(byCodePoint),
  "10": ["Exp, Inc./R&D, \"Skunk\" Works/Platform"],
  "100": [],
};
const MODELS: SentEvent["model"][] = [["acme", "Chat", "Builtin"], ["Zeta", "CUE", "Builtin"], ["Zeta", "Chat", "Builtin"], ["local-llm", "Chat", "Custom"]];

/** mulberry32: the same events every run. */
function random(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function sentEvents(): SentEvent[] {
  const rand = random(7);
  const events: SentEvent[] = [];
  const add = (user_id: string, timestamp: number, m = Math.floor(rand() * MODELS.length)) => {
    const model = MODELS[m]!;
    const charged = model[2] === "Builtin";
    events.push({ user_id, model, timestamp, input: 1 + Math.floor(rand() * 5000), output: Math.floor(rand() * 900),
      basic: charged ? BigInt(Math.floor(rand() * 9_000_000)) : 0n, payGo: charged && rand() < 0.5 ? BigInt(Math.floor(rand() * 3_000_000)) : 0n });
  };
  // Spread over the window and two days either side of it.
  for (let i = 0; i < 600; i++) add(MEMBERS[i % 3]!.user_id, WINDOW.start - 2 * 86_400 + Math.floor(rand() * (WINDOW.end - WINDOW.start + 4 * 86_400)));
  // Each side of local midnights and of the window's edges.
  for (const midnight of [WINDOW.start, ktm("2025-03-09"), ktm("2025-03-10"), WINDOW.end]) {
    for (const ts of [midnight - 1, midnight, midnight + 1]) add("9", ts, 0);
  }
  return events;
}

const localDate = (ts: number, timeZone: string) =>
  new Intl.DateTimeFormat("en-CA", { timeZone, year: "numeric", month: "2-digit", day: "2-digit" }).format(new Date(ts * 1000));

/** The rows the export must give, as NDJSON would carry them (parseJsonBig: numbers below 16 digits). */
function expectedRows(events: readonly SentEvent[], start: number, end: number, timeZone: string, emails: Record<string, string>, currency: string) {
  const groups = new Map<string, { date: string; user_id: string; model: SentEvent["model"]; events: number; input: bigint; output: bigint; basic: bigint; payGo: bigint }>();
  for (const e of events) {
    if (e.timestamp < start || e.timestamp >= end) continue;
    const date = localDate(e.timestamp, timeZone);
    const key = JSON.stringify([date, e.user_id, e.model]);
    const g = groups.get(key) ?? { date, user_id: e.user_id, model: e.model, events: 0, input: 0n, output: 0n, basic: 0n, payGo: 0n };
    groups.set(key, g);
    g.events++;
    g.input += BigInt(e.input);
    g.output += BigInt(e.output);
    g.basic += e.basic;
    g.payGo += e.payGo;
  }
  return [...groups.values()]
    .sort((a, b) => byCodePoint(a.date, b.date) || byCodePoint(a.user_id, b.user_id) || byCodePoint(a.model[0], b.model[0])
      || byCodePoint(a.model[1], b.model[1]) || byCodePoint(a.model[2], b.model[2]))
    .map((g) => ({
      date: g.date, user_id: g.user_id, email: emails[g.user_id], department_paths: PATHS[g.user_id] ?? [],
      model_name: g.model[0], model_type: g.model[1], model_source: g.model[2], events: g.events,
      input_tokens: Number(g.input), output_tokens: Number(g.output),
      basic_amount: sixDecimals(g.basic), pay_go_amount: sixDecimals(g.payGo), total_amount: sixDecimals(g.basic + g.payGo), currency,
      former_member: false,
    }));
}

describe.each(dialects)("usage export (%s)", (dialect) => {
  let svc: TestService;
  let token: string;
  const tenant = `export-${dialect}`;
  const events = sentEvents();
  const emails = Object.fromEntries(MEMBERS.map((m) => [m.user_id, m.email]));
  const grpc = () => createClient(UsageService, createGrpcTransport({ baseUrl: svc.baseUrl }));
  const connect = (binary: boolean) => createClient(UsageService, createConnectTransport({ baseUrl: svc.baseUrl, httpVersion: "1.1", useBinaryFormat: binary }));

  async function record(enterpriseId: string, sent: readonly SentEvent[], prefix: string) {
    const labelled = sent.map((e, i) => ({
      event: checkUsageEvent({
        event_id: `${prefix}-${i}`, user_id: e.user_id, model_name: e.model[0], model_type: e.model[1], model_source: e.model[2],
        timestamp: e.timestamp, input_tokens: e.input, output_tokens: e.output,
        basic_amount: sixDecimals(e.basic), pay_go_amount: sixDecimals(e.payGo),
      }, `event ${i}`),
      where: `event ${i}`,
    }));
    for (let i = 0; i < labelled.length; i += 1000) await recordUsage(new UsageRepository(svc.database), enterpriseId, labelled.slice(i, i + 1000));
  }

  beforeAll(async () => {
    svc = await startTestService(dialect);
    await importDirectory(svc.database, {
      enterprise: { enterprise_id: tenant, name: "Exp", currency: "USD", time_zone: KATHMANDU },
      departments: [
        { department_id: "100", parent_department_id: "0", name: "Exp, Inc." },
        { department_id: "110", parent_department_id: "100", name: "R&D, \"Skunk\" Works" },
        { department_id: "111", parent_department_id: "110", name: "Platform" },
        { department_id: "121", parent_department_id: "100", name: "Sales" },
      ],
      members: MEMBERS.map((m) => ({ ...m, account_type: 1 as const })),
    });
    await record(tenant, events, "main");
    token = await svc.token(["statistics:read"], tenant);
  });

  afterAll(async () => {
    await svc?.close();
  });

  async function get(query: Record<string, string | number>, auth: string | null = token) {
    const headers: Record<string, string> = auth === null ? {} : { authorization: `Bearer ${auth}` };
    const res = await fetch(`${svc.baseUrl}${EXPORT}?${new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]))}`, { headers });
    return { status: res.status, headers: res.headers, text: await res.text() };
  }
  const ndjson = (text: string) => text.split("\n").filter((line) => line !== "").map((line) => parseJsonBig(line));

  it("NDJSON rows are the events summed per local date, member and model, in date, user_id and model order", async () => {
    const res = await get({ start_time: WINDOW.start, end_time: WINDOW.end, format: "ndjson" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    expect(res.headers.get("content-disposition")).toBe('attachment; filename="usage-2025-03-01-2025-03-20.ndjson"');
    const rows = ndjson(res.text);
    expect(rows).toEqual(expectedRows(events, WINDOW.start, WINDOW.end, KATHMANDU, emails, "USD"));
    expect(Object.keys(rows[0])).toEqual(COLUMNS);
    expect(rows.some((row) => row.user_id === "9" && row.department_paths.length === 2)).toBe(true);
  });

  it("days of the enterprise's zone, read from the rollups, and days read from the raw events are the same rows", async () => {
    // The window's days are whole days of the enterprise's zone (Kathmandu): the rollups' per-model member sums. Without a current
    // layout the same days are summed from the raw events.
    const fromRollups = (await get({ start_time: WINDOW.start, end_time: WINDOW.end, format: "ndjson" })).text;
    const [layout] = await svc.database.db.selectFrom("usage_layout").selectAll().where("enterprise_id", "=", tenant).execute();
    expect(layout).toBeDefined();
    await svc.database.db.deleteFrom("usage_layout").where("enterprise_id", "=", tenant).execute();
    try {
      const fromRaw = (await get({ start_time: WINDOW.start, end_time: WINDOW.end, format: "ndjson" })).text;
      expect(fromRaw).toBe(fromRollups);
      expect(ndjson(fromRaw)).toEqual(expectedRows(events, WINDOW.start, WINDOW.end, KATHMANDU, emails, "USD"));
    } finally {
      await svc.database.db.insertInto("usage_layout").values(layout!).execute();
    }
  });

  it("rows summed per member and model equal user-model-usage over the same whole local days, exactly", async () => {
    const rows = ndjson((await get({ start_time: WINDOW.start, end_time: WINDOW.end, format: "ndjson" })).text);
    const sums = new Map<string, { input: bigint; output: bigint; basic: bigint; payGo: bigint; total: bigint }>();
    const micros = (amount: string) => BigInt(amount.replace(".", ""));
    for (const row of rows) {
      const key = JSON.stringify([row.user_id, row.model_name, row.model_type, row.model_source]);
      const s = sums.get(key) ?? { input: 0n, output: 0n, basic: 0n, payGo: 0n, total: 0n };
      sums.set(key, s);
      s.input += BigInt(row.input_tokens);
      s.output += BigInt(row.output_tokens);
      s.basic += micros(row.basic_amount);
      s.payGo += micros(row.pay_go_amount);
      s.total += micros(row.total_amount);
    }
    const all = await svc.token(["statistics:read"], tenant);
    const res = await fetch(svc.baseUrl + QUERY, {
      method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${all}` },
      body: JSON.stringify({ start_time: WINDOW.start, end_time: WINDOW.end, user_ids: MEMBERS.map((m) => m.user_id) }),
    });
    const query = parseJsonBig(await res.text());
    const fromQuery = new Map<string, unknown>();
    for (const item of query.data.items) {
      for (const u of item.model_usage) {
        fromQuery.set(JSON.stringify([item.user_id, u.model_name, u.model_type, u.model_source]), {
          input: BigInt(u.usage.input_tokens), output: BigInt(u.usage.output_tokens), basic: micros(u.amount.basic_amount),
          payGo: micros(u.amount.pay_go_amount), total: micros(u.amount.total_amount),
        });
      }
    }
    expect(fromQuery.size).toBeGreaterThan(6);
    expect(Object.fromEntries(sums)).toEqual(Object.fromEntries(fromQuery));
  });

  it("dates are local: +05:45 by default, and a daylight-saving zone by time_zone, each side of midnight", async () => {
    const id = `${tenant}-dates`;
    await importDirectory(svc.database, {
      enterprise: { enterprise_id: id, name: "Dates", currency: "CNY", time_zone: KATHMANDU },
      departments: [], members: [{ user_id: "1", email: "one@dates.example", account_type: 1, department_ids: [] }],
    });
    const at = (iso: string) => Date.parse(iso) / 1000;
    const one = (timestamp: number): SentEvent => ({ user_id: "1", model: ["m", "Chat", "Builtin"], timestamp, input: 1, output: 0, basic: 1n, payGo: 0n });
    await record(id, [
      "2025-03-09T04:59:59Z", "2025-03-09T05:00:00Z", // New York midnight of Mar 9 (EST, -05:00)
      "2025-03-09T18:14:59Z", "2025-03-09T18:15:00Z", "2025-03-09T18:15:01Z", // Kathmandu midnight of Mar 10
      "2025-03-10T03:59:59Z", "2025-03-10T04:00:00Z", // New York midnight of Mar 10 (EDT, -04:00: Mar 9 lasted 23 hours)
    ].map((iso) => one(at(iso))), "dates");
    const dateToken = await svc.token(["statistics:read"], id);
    const dates = async (query: Record<string, string | number>) =>
      ndjson((await get({ ...query, format: "ndjson" }, dateToken)).text).map((row) => [row.date, row.events]);

    expect(await dates({ start_time: at("2025-03-08T00:00:00Z"), end_time: at("2025-03-12T00:00:00Z") }))
      .toEqual([["2025-03-09", 3], ["2025-03-10", 4]]);
    expect(await dates({ start_time: at("2025-03-08T00:00:00Z"), end_time: at("2025-03-12T00:00:00Z"), time_zone: "America/New_York" }))
      .toEqual([["2025-03-08", 1], ["2025-03-09", 5], ["2025-03-10", 1]]);
    // A window cut inside a local day: the day's row holds only the events inside the window.
    expect(await dates({ start_time: at("2025-03-09T18:15:00Z"), end_time: at("2025-03-10T04:00:00Z") }))
      .toEqual([["2025-03-10", 3]]);
  });

  it("a local midnight off the quarter hour (Africa/Monrovia, -00:44:30 until 1972, the enterprise's zone) parts the dates to the second", async () => {
    const id = `${tenant}-monrovia`;
    await importDirectory(svc.database, {
      enterprise: { enterprise_id: id, name: "Monrovia", currency: "USD", time_zone: "Africa/Monrovia" },
      departments: [], members: [{ user_id: "1", email: "one@monrovia.example", account_type: 1, department_ids: [] }],
    });
    const at = (iso: string) => Date.parse(iso) / 1000;
    const one = (timestamp: number): SentEvent => ({ user_id: "1", model: ["m", "Chat", "Builtin"], timestamp, input: 1, output: 0, basic: 1n, payGo: 0n });
    // Midnights at 00:44:30 UTC, inside the quarter hour from 00:30.
    await record(id, ["1971-03-10T00:30:00Z", "1971-03-10T00:44:29Z", "1971-03-10T00:44:30Z", "1971-03-10T00:44:59Z", "1971-03-11T00:44:29Z",
      "1971-03-11T00:44:30Z"].map((iso) => one(at(iso))), "monrovia");
    const rows = ndjson((await get({ start_time: at("1971-03-09T00:44:30Z"), end_time: at("1971-03-12T00:44:30Z"), format: "ndjson" },
      await svc.token(["statistics:read"], id))).text);
    expect(rows.map((row) => [row.date, row.events])).toEqual([["1971-03-09", 2], ["1971-03-10", 3], ["1971-03-11", 1]]);
  });

  it("CSV: RFC 4180 with a header line, quoted commas and quotes, paths joined by \" | \", parses back to the NDJSON rows", async () => {
    const res = await get({ start_time: WINDOW.start, end_time: WINDOW.end });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(res.headers.get("content-disposition")).toBe('attachment; filename="usage-2025-03-01-2025-03-20.csv"');
    expect(res.text.startsWith(`${COLUMNS.join(",")}\r\n`)).toBe(true);
    expect(res.text).toContain(`"Exp, Inc./R&D, ""Skunk"" Works | Exp, Inc./Sales"`);
    const parsed: string[][] = parseCsv(res.text, { relax_quotes: false });
    expect(parsed[0]).toEqual(COLUMNS);
    const expected = expectedRows(events, WINDOW.start, WINDOW.end, KATHMANDU, emails, "USD")
      .map((row) => COLUMNS.map((c) => (c === "department_paths" ? row.department_paths.join(" | ") : String(row[c as keyof typeof row]))));
    expect(parsed.slice(1)).toEqual(expected);
  });

  it("CSV: a cell a spreadsheet would run as a formula (=, +, -, @ first) starts with ' ; NDJSON keeps the text as it is", async () => {
    const id = `${tenant}-formula`;
    const hyperlink = `=HYPERLINK("http://evil.example","click")`;
    await importDirectory(svc.database, {
      enterprise: { enterprise_id: id, name: "Formula", currency: "USD" },
      departments: [{ department_id: "1", parent_department_id: "0", name: "=SUM(1+1)" }],
      members: [{ user_id: "m1", email: "+1@formula.example", account_type: 1, department_ids: ["1"] }],
    });
    const day = Date.parse("2025-06-01T00:00:00Z") / 1000;
    await record(id, [[hyperlink, "Chat", "Builtin"], ["@cmd", "CUE", "Builtin"], ["-2+3", "Chat", "Custom"], ["x;=1+1;y", "Chat", "Builtin"],
      ["x\t=2+2", "CUE", "Custom"]].map(([name, type, source], i) =>
      ({ user_id: "m1", model: [name, type, source] as SentEvent["model"], timestamp: day + i, input: 1, output: 1, basic: 0n, payGo: 0n })), "formula");
    const auth = await svc.token(["statistics:read"], id);
    const window = { start_time: day, end_time: day + 86_400 };
    const text = (await get(window, auth)).text;
    const csv: string[][] = parseCsv(text);
    const column = (name: string) => csv.slice(1).map((row) => row[COLUMNS.indexOf(name)]);
    expect(column("model_name")).toEqual(["'-2+3", `'${hyperlink}`, "'@cmd", "x\t=2+2", "x;=1+1;y"]);
    expect(column("email")).toEqual(Array(5).fill("'+1@formula.example"));
    expect(column("department_paths")).toEqual(Array(5).fill("'=SUM(1+1)"));
    // A cell holding ";" or a tab is quoted: a spreadsheet splitting the file on either still sees one cell, not "=1+1".
    expect(text).toContain(',"x;=1+1;y",');
    expect(text).toContain(',"x\t=2+2",');
    const rows = ndjson((await get({ ...window, format: "ndjson" }, auth)).text);
    expect(rows.map((row) => [row.model_name, row.email, row.department_paths])).toEqual(
      ["-2+3", hyperlink, "@cmd", "x\t=2+2", "x;=1+1;y"].map((name) => [name, "+1@formula.example", ["=SUM(1+1)"]]));
  });

  it("an export with no rows is the header line alone (CSV) or an empty body (NDJSON)", async () => {
    const empty = { start_time: WINDOW.start - 400 * 86_400, end_time: WINDOW.start - 300 * 86_400 };
    expect((await get(empty)).text).toBe(`${COLUMNS.join(",")}\r\n`);
    const res = await get({ ...empty, format: "ndjson" });
    expect([res.status, res.text]).toEqual([200, ""]);
  });

  it("gRPC and Connect (JSON and binary) streaming clients get the same rows as REST", async () => {
    const rest = ndjson((await get({ start_time: WINDOW.start, end_time: WINDOW.end, format: "ndjson" })).text).map((row) => JSON.stringify(row));
    const headers = { authorization: `Bearer ${token}` };
    for (const client of [grpc(), connect(false), connect(true)]) {
      const rows: string[] = [];
      for await (const message of client.exportUsage({ startTime: BigInt(WINDOW.start), endTime: BigInt(WINDOW.end) }, { headers })) {
        for (const row of message.rows) {
          const json = toJson(UsageExportRowSchema, row, { useProtoFieldName: true, alwaysEmitImplicit: true }) as Record<string, unknown>;
          for (const key of ["events", "input_tokens", "output_tokens"]) json[key] = Number(json[key]);
          rows.push(JSON.stringify(json));
        }
      }
      expect(rows).toEqual(rest);
    }
  });

  it("messages carry at most 1,000 rows: a day of 1,200 rows comes as 1,000 then 200", async () => {
    const id = `${tenant}-bulk`;
    const members = Array.from({ length: 400 }, (_, i) => ({ user_id: `u${1000 + i}`, email: `u${i}@bulk.example`, account_type: 1 as const, department_ids: [] }));
    await importDirectory(svc.database, { enterprise: { enterprise_id: id, name: "Bulk", currency: "CNY" }, departments: [], members });
    const day = Date.parse("2025-05-01T00:00:00Z") / 1000;
    await record(id, members.flatMap((m, i) => MODELS.slice(0, 3).map((model, j) =>
      ({ user_id: m.user_id, model, timestamp: day + i * 60 + j, input: 1, output: 1, basic: 0n, payGo: 0n }))), "bulk");
    const sizes: number[] = [];
    const stream = grpc().exportUsage({ startTime: BigInt(day), endTime: BigInt(day + 86_400) }, { headers: { authorization: `Bearer ${await svc.token(["statistics:read"], id)}` } });
    for await (const message of stream) sizes.push(message.rows.length);
    expect(sizes).toEqual([1000, 200]);
  });

  it("messages stay below the 4 MiB a gRPC client takes by default: rows of members in many deep departments come in smaller messages", async () => {
    // Each row names 10 department paths of 8 names of 50 characters (about 4,200 characters): 1,000 of them would be over 4 MiB.
    const id = `${tenant}-deep`;
    const departments = [{ department_id: "d", parent_department_id: "0", name: "Deep Corp" }];
    const leaves: string[] = [];
    for (let chain = 0; chain < 10; chain++) {
      let parent = "d";
      for (let level = 1; level <= 8; level++) {
        departments.push({ department_id: `d${chain}-${level}`, parent_department_id: parent, name: `Chain ${chain} level ${level} `.padEnd(50, "x") });
        parent = `d${chain}-${level}`;
      }
      leaves.push(parent);
    }
    const members = Array.from({ length: 400 }, (_, i) => ({ user_id: `deep${1000 + i}`, email: `deep${i}@deep.example`, account_type: 1 as const, department_ids: leaves }));
    await importDirectory(svc.database, { enterprise: { enterprise_id: id, name: "Deep Corp", currency: "CNY" }, departments, members });
    const day = Date.parse("2025-05-02T00:00:00Z") / 1000;
    await record(id, members.flatMap((m, i) => MODELS.slice(0, 3).map((model, j) =>
      ({ user_id: m.user_id, model, timestamp: day + i * 60 + j, input: 1, output: 1, basic: 0n, payGo: 0n }))), "deep");
    const limited = createClient(UsageService, createGrpcTransport({ baseUrl: svc.baseUrl, readMaxBytes: 4 * 1024 * 1024 }));
    const sizes: number[] = [];
    const stream = limited.exportUsage({ startTime: BigInt(day), endTime: BigInt(day + 86_400) }, { headers: { authorization: `Bearer ${await svc.token(["statistics:read"], id)}` } });
    for await (const message of stream) {
      expect(message.rows.every((row) => row.departmentPaths.length === 10)).toBe(true);
      sizes.push(message.rows.length);
    }
    expect(sizes.reduce((sum, size) => sum + size, 0)).toBe(1_200);
    expect(Math.max(...sizes)).toBeLessThan(1_000);
  });

  it("an export cut by a store fault after its first rows is logged and counted as that fault (2001), not as its caller leaving (4990)", async () => {
    const id = `${tenant}-cut`;
    const members = [{ user_id: "c1", email: "c1@cut.example", account_type: 1 as const, department_ids: [] }];
    await importDirectory(svc.database, { enterprise: { enterprise_id: id, name: "Cut", currency: "USD" }, departments: [], members });
    const day = Date.parse("2025-06-01T00:00:00Z") / 1000;
    await record(id, [0, 1, 2].map((d) => ({ user_id: "c1", model: MODELS[0]!, timestamp: day + d * 86_400 + 60, input: 1, output: 1, basic: 0n, payGo: 0n })), "cut");
    const token = await svc.token(["statistics:read"], id);
    const url = `${svc.baseUrl}${EXPORT}?start_time=${day}&end_time=${day + 3 * 86_400}&time_zone=UTC&format=ndjson`;
    const whole = await fetch(url, { headers: { authorization: `Bearer ${token}` } }); // adds the batch's pending rollups
    expect([whole.status, (await whole.text()).split("\n").filter(Boolean).length]).toStrictEqual([200, 3]);
    // The third day's stored member sums, damaged: that day's read fails once the first day's rows have gone out.
    const damaged = await svc.database.db.updateTable("usage_rollup_members").set({ member_sums: Uint8Array.of(1, 2, 3) })
      .where("enterprise_id", "=", id).where("period", "=", day + 2 * 86_400).where("member_sums", "is not", null).executeTakeFirst();
    expect(damaged.numUpdatedRows).toBeGreaterThan(0n);
    // HEAD answers the GET's status and headers without making the rest of the export: it never reaches the damaged day.
    // On a connection of its own, as below: a reused one could be closed by the server as the request goes out, and fetch would send it
    // again (one request id, two log lines).
    const head = await new Promise<{ status: number; headers: (string | undefined)[] }>((resolve, reject) => {
      http.request(url, { method: "HEAD", agent: false, headers: { authorization: `Bearer ${token}`, "x-request-id": `${id}-head`, "accept-encoding": "gzip" } }, (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode!, headers: ["content-type", "content-encoding", "vary"].map((name) => res.headers[name] as string | undefined) }));
      }).on("error", reject).end();
    });
    expect(head).toStrictEqual({ status: 200, headers: ["application/x-ndjson", "gzip", "Accept-Encoding"] });
    expect(["content-type", "content-encoding", "vary"].map((name) => whole.headers.get(name))).toStrictEqual(head.headers); // fetch takes gzip
    const headLine = async () => svc.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.request_id === `${id}-head` && l.status !== undefined);
    await expect.poll(headLine, { timeout: 2000 }).toMatchObject({ method: "HEAD", status: 200, msg: "request" });
    expect((await headLine())!.code).toBeUndefined();
    // Uncompressed and gzipped: either way the status and the first day's rows go out before the third day fails.
    // Each on a connection of its own (a reused one could be the one a cut answer closed).
    for (const encoding of ["identity", "gzip"]) {
      const answer = await new Promise<{ status: number; complete: boolean }>((resolve, reject) => {
        http.get(url, { agent: false, headers: { authorization: `Bearer ${token}`, "x-request-id": `${id}-${encoding}`, "accept-encoding": encoding } }, (res) => {
          res.resume();
          res.on("error", () => {});
          res.on("close", () => resolve({ status: res.statusCode!, complete: res.complete }));
        }).on("error", reject);
      });
      expect(answer, encoding).toStrictEqual({ status: 200, complete: false });
      const line = async () => svc.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.request_id === `${id}-${encoding}` && l.status !== undefined);
      await expect.poll(line, { timeout: 2000 }).toMatchObject({ status: 200, code: 2001, msg: "request failed" });
    }
    const metrics = await (await fetch(`${svc.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/enterprise_admin_calls_total\{procedure="\/enterprise_admin.v1.UsageService\/ExportUsage",transport="rest",code="2001"\} 2/);
  });

  it("a member's day sum past 2^53 is exact to the token and micro-unit, in NDJSON and CSV", async () => {
    const id = `${tenant}-big`;
    await importDirectory(svc.database, { enterprise: { enterprise_id: id, name: "Big", currency: "USD" }, departments: [],
      members: [{ user_id: "b1", email: "b1@big.example", account_type: 1, department_ids: [] }] });
    // 9,101 events of odd values near the largest: every sum is odd and past 2^53, where a double
    // holds only even integers.
    const day = Date.parse("2025-06-01T00:00:00Z") / 1000;
    const count = 9_101;
    await record(id, Array.from({ length: count }, (_, i) => ({ user_id: "b1", model: MODELS[0]!, timestamp: day + i,
      input: 999_999_999_999, output: 999_999_999_997, basic: 999_999_999_999n, payGo: 999_999_999_997n })), "big");
    const auth = { authorization: `Bearer ${await svc.token(["statistics:read"], id)}` };
    const query = `start_time=${day}&end_time=${day + 86_400}&time_zone=UTC`;
    const fetchText = async (format: string) => (await fetch(`${svc.baseUrl}${EXPORT}?${query}&format=${format}`, { headers: auth })).text();
    const expected = {
      events: count, input_tokens: 999_999_999_999n * BigInt(count), output_tokens: 999_999_999_997n * BigInt(count),
      basic_amount: sixDecimals(999_999_999_999n * BigInt(count)), pay_go_amount: sixDecimals(999_999_999_997n * BigInt(count)),
      total_amount: sixDecimals(1_999_999_999_996n * BigInt(count)),
    };
    expect(expected.input_tokens > 2n ** 53n).toBe(true);
    expect(ndjson(await fetchText("ndjson"))).toEqual([expect.objectContaining({ date: "2025-06-01", user_id: "b1", ...expected })]);
    const [csvRow] = parseCsv(await fetchText("csv"), { columns: true }) as Record<string, string>[];
    expect(csvRow).toMatchObject(Object.fromEntries(Object.entries(expected).map(([k, v]) => [k, String(v)])));
  });

  it("keeps each day in user_id order when members first seen on later days sort before those seen earlier", async () => {
    const id = `${tenant}-order`;
    const users = ["m", "b", "x", "a", "\u{1F600}", "\uFF5E"]; // code point order: a, b, m, x, U+FF5E, U+1F600
    await importDirectory(svc.database, { enterprise: { enterprise_id: id, name: "Order", currency: "USD" }, departments: [],
      members: users.map((user_id) => ({ user_id, email: `${user_id.codePointAt(0)}@order.example`, account_type: 1 as const, department_ids: [] })) });
    const day = Date.parse("2025-07-01T00:00:00Z") / 1000;
    // Day 1: m alone; day 2: b and x too; day 3: everyone, a and the two past U+FFFF for the first time.
    const seen = [["m"], ["m", "b", "x"], users];
    await record(id, seen.flatMap((who, d) => who.map((user_id, i) => ({ user_id, model: MODELS[i % 2]!, timestamp: day + d * 86_400 + i,
      input: 1, output: 1, basic: 0n, payGo: 0n }))), "order");
    const auth = { authorization: `Bearer ${await svc.token(["statistics:read"], id)}` };
    const exported = await fetch(`${svc.baseUrl}${EXPORT}?start_time=${day}&end_time=${day + 3 * 86_400}&time_zone=UTC&format=ndjson`, { headers: auth });
    const rows = ndjson(await exported.text()) as Array<{ date: string; user_id: string }>;
    expect(rows.map((row) => `${row.date} ${row.user_id}`)).toStrictEqual(seen.flatMap((who, d) =>
      [...who].sort(byCodePoint).map((user_id) => `2025-07-0${d + 1} ${user_id}`)));
  });

  it("a member's day sum past 2^63 (where SQLite's sum stops) is exact, and so is the report over the raw events", async () => {
    const id = `${tenant}-huge`;
    await importDirectory(svc.database, { enterprise: { enterprise_id: id, name: "Huge", currency: "USD" }, departments: [],
      members: [{ user_id: "h1", email: "h1@huge.example", account_type: 1, department_ids: [] }] });
    // Two events of 5 x 10^18 (far past the API's per-event ceiling: written just below it, as the
    // store allows up to 2^64 - 1 a running total): the day's sum, 10^19, passes 2^63 - 1.
    const day = Date.parse("2025-06-02T00:00:00Z") / 1000;
    const huge = 5n * 10n ** 18n;
    await recordUsage(new UsageRepository(svc.database), id, [0, 1].map((i) => ({
      where: `event ${i}`,
      event: { eventId: `huge-${i}`, userId: "h1", modelName: "m", modelType: "Chat", modelSource: "Builtin", timestamp: day + i,
        inputTokens: huge, outputTokens: 1, basicMicros: huge, payGoMicros: 3 },
    })));
    const auth = { authorization: `Bearer ${await svc.token(["statistics:read"], id)}` };
    const window = `start_time=${day}&end_time=${day + 86_400}&time_zone=UTC`;
    const exported = await fetch(`${svc.baseUrl}${EXPORT}?${window}&format=ndjson`, { headers: auth });
    expect(ndjson(await exported.text())).toEqual([expect.objectContaining({
      date: "2025-06-02", user_id: "h1", events: 2, input_tokens: 2n * huge, output_tokens: 2, basic_amount: sixDecimals(2n * huge),
      pay_go_amount: "0.000006", total_amount: sixDecimals(2n * huge + 6n),
    })]);
    // By model for one member: the report reads the raw events, summed by the export's statement.
    const reported = await fetch(`${svc.baseUrl}/openapi/v1/statistics/usage-report`, {
      method: "POST", headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ start_time: day, end_time: day + 86_400, time_zone: "UTC", bucket: "none", group_by: ["model"], user_ids: ["h1"] }),
    });
    expect(parseJsonBig(await reported.text()).data.buckets[0].groups).toEqual([expect.objectContaining({
      model_name: "m", events: 2, input_tokens: 2n * huge, basic_amount: sixDecimals(2n * huge), total_amount: sixDecimals(2n * huge + 6n),
    })]);
  });

  describe("refusals", () => {
    const window = { start_time: WINDOW.start, end_time: WINDOW.end };
    const envelope = (code: number, message: unknown) => ({ code, message, request_id: expect.any(String), data: null });

    it("401 without a token and 403 without statistics:read, as the JSON error envelope", async () => {
      const none = await get(window, null);
      expect([none.status, JSON.parse(none.text)]).toEqual([401, envelope(1002, expect.any(String))]);
      const writer = await get(window, await svc.token(["usage:write"], tenant));
      expect([writer.status, JSON.parse(writer.text)]).toEqual([403, envelope(30017, expect.stringContaining("statistics:read"))]);
      await expect(async () => {
        for await (const _ of grpc().exportUsage({ startTime: BigInt(WINDOW.start), endTime: BigInt(WINDOW.end) })) void _;
      }).rejects.toMatchObject({ code: Code.Unauthenticated });
    });

    it.each([
      ["end_time not after start_time", { start_time: 100, end_time: 100 }, "end_time must be after start_time"],
      ["a window over 366 days", { start_time: 0, end_time: 366 * 86_400 + 1 }, "end_time - start_time: 31622401 seconds > 31622400 (366 days)"],
      ["an unknown time zone", { ...window, time_zone: "Mars/Olympus" }, "time_zone: \"Mars/Olympus\" is not an IANA time zone name"],
      ["an unknown format", { ...window, format: "xml" }, "format: must be one of csv, ndjson, or left out"],
      ["a negative start_time", { start_time: -1, end_time: 10 }, "start_time: "],
      ["an unknown query parameter", { ...window, bucket: "day" }, "bucket: unknown query parameter"],
      ["a window past the events' last second", { start_time: 8_640_000_000_000, end_time: 8_640_000_086_400 }, "end_time: 8640000086400 > 253402300800"],
    ])("400 with 4001 for %s, naming the field", async (_name, query, message) => {
      const res = await get(query);
      expect([res.status, JSON.parse(res.text)]).toEqual([400, envelope(4001, expect.stringContaining(message))]);
    });

    it("a query parameter given twice is 4001 naming it, not the last value taken", async () => {
      for (const query of [`start_time=${WINDOW.start}&start_time=0&end_time=${WINDOW.end}`, `start_time=${WINDOW.start}&end_time=${WINDOW.end}&format=csv&format=ndjson`]) {
        const res = await fetch(`${svc.baseUrl}${EXPORT}?${query}`, { headers: { authorization: `Bearer ${token}` } });
        const name = query.includes("format=ndjson") ? "format" : "start_time";
        expect([res.status, JSON.parse(await res.text())]).toEqual([400, envelope(4001, `${name}: given twice; send it once`)]);
      }
    });

    it("a window whose last local date passes 9999-12-31 is INVALID_ARGUMENT before any row, its earlier days' rows included", async () => {
      const december = Date.UTC(9999, 11, 1) / 1000;
      await record(tenant, [{ ...events[0]!, timestamp: december + 3600 }], "year-9999");
      const rows: unknown[] = [];
      const error = await (async () => {
        for await (const message of grpc().exportUsage({ startTime: BigInt(december), endTime: 253_402_300_800n, timeZone: "Asia/Kolkata" },
          { headers: { authorization: `Bearer ${token}` } })) rows.push(...message.rows);
      })().catch((e: unknown) => e);
      expect([rows.length, (error as ConnectError).code, (error as ConnectError).rawMessage])
        .toEqual([0, Code.InvalidArgument, "end_time: 253402300800 falls on a local date past 9999-12-31 in Asia/Kolkata"]);
      const res = await get({ start_time: december, end_time: 253_402_300_800, time_zone: "Asia/Kolkata" });
      expect([res.status, JSON.parse(res.text)]).toEqual([400, envelope(4001, expect.stringContaining("past 9999-12-31"))]);
    });

    it("a Connect JSON stream's bad request is read as REST's: 4001 naming the field, with the ErrorDetail, its value not echoed", async () => {
      const envelope = (json: string, flags = 0) => {
        const message = Buffer.from(json);
        const framed = Buffer.concat([Buffer.from([flags, 0, 0, 0, 0]), message]);
        framed.writeUInt32BE(message.length, 1);
        return framed;
      };
      const stream = async (json: string | Buffer, headers: Record<string, string> = {}) => {
        const body = typeof json === "string" ? envelope(json) : json;
        const res = await fetch(`${svc.baseUrl}/enterprise_admin.v1.UsageService/ExportUsage`, {
          method: "POST", body, headers: { authorization: `Bearer ${token}`, "content-type": "application/connect+json", ...headers },
        });
        const bytes = Buffer.from(await res.arrayBuffer());
        return JSON.parse(bytes.subarray(5).toString()) as { error?: { code: string; message: string; details?: { debug: { code: number } }[] } };
      };
      const typo = await stream(`{"start_time":"1740787200x-secret","end_time":${WINDOW.end}}`);
      expect(typo.error).toMatchObject({ code: "invalid_argument", message: "start_time: expected an integer", details: [{ debug: { code: 4001 } }] });
      expect(JSON.stringify(typo)).not.toContain("x-secret");
      const unknown = await stream(`{"start_time":${WINDOW.start},"end_time":${WINDOW.end},"zone":"UTC"}`);
      expect(unknown.error).toMatchObject({ code: "invalid_argument", message: expect.stringContaining("zone"), details: [{ debug: { code: 4001 } }] });
      const gzipped = await stream(`{"start_time":${WINDOW.start},"end_time":${WINDOW.end}}`, { "connect-content-encoding": "gzip" });
      expect(gzipped.error).toMatchObject({ code: "invalid_argument", message: expect.stringContaining("JSON bodies are taken uncompressed") });
      // A 64-bit integer past 2^53 is read exactly, as REST reads it (JSON.parse would make it ...992): the window's length says so.
      const exact = await stream(`{"start_time":${WINDOW.start},"end_time":9007199254740993}`);
      expect(exact.error?.message).toContain(`end_time - start_time: ${9007199254740993n - BigInt(WINDOW.start)} seconds`);
      // The body is one whole message, uncompressed: none, two, one cut short, or one flagged compressed is 4001 saying so.
      const good = envelope(`{"start_time":${WINDOW.start},"end_time":${WINDOW.end}}`);
      for (const [body, message] of [
        [Buffer.alloc(0), "body: 0 messages; this method takes one"],
        [Buffer.concat([good, good]), "body: 2 messages; this method takes one"],
        [good.subarray(0, good.length - 3), "body: a message cut short (its envelope announces more bytes than came)"],
        [envelope(`{"start_time":${WINDOW.start},"end_time":${WINDOW.end}}`, 1), "body: a compressed message: JSON is taken uncompressed"],
      ] as const) {
        expect((await stream(body)).error).toMatchObject({ code: "invalid_argument", message, details: [{ debug: { code: 4001 } }] });
      }
    });

    it("over gRPC a bad window is INVALID_ARGUMENT before any row", async () => {
      const error = await (async () => {
        for await (const _ of grpc().exportUsage({ startTime: 0n, endTime: BigInt(400 * 86_400) }, { headers: { authorization: `Bearer ${token}` } })) void _;
      })().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConnectError);
      expect([(error as ConnectError).code, (error as ConnectError).rawMessage]).toEqual([Code.InvalidArgument, expect.stringContaining("366 days")]);
    });
  });

  describe("CLI export usage", () => {
    const dir = scratchFolder("eadmin-export-");
    const base = () => ["export", "usage", "--db", svc.databaseUrl, "--enterprise", tenant, "--from", "2025-03-01", "--to", "2025-03-20"];

    it("writes --out (CSV by default), the same bytes as REST, and exits 0", async () => {
      const out = join(dir, "march.csv");
      const run = await cli([...base(), "--out", out]);
      expect([run.code, run.stdout]).toEqual([0, ""]);
      expect(JSON.parse(run.stderr.trim())).toMatchObject({ enterprise_id: tenant, time_zone: KATHMANDU, out });
      expect(readFileSync(out, "utf8")).toBe((await get({ start_time: WINDOW.start, end_time: WINDOW.end })).text);
      expect(readdirSync(dir).filter((name) => name.includes("partial"))).toEqual([]);
    });

    it("writes NDJSON to stdout in another zone, as REST does", async () => {
      const run = await cli([...base(), "--format", "ndjson", "--time-zone", "America/New_York"]);
      expect(run.code).toBe(0);
      const start = Date.parse("2025-03-01T05:00:00Z") / 1000;
      const end = Date.parse("2025-03-21T04:00:00Z") / 1000; // after the switch to daylight saving time
      expect(run.stdout).toBe((await get({ start_time: start, end_time: end, time_zone: "America/New_York", format: "ndjson" })).text);
      expect(run.stdout.length).toBeGreaterThan(0);
    });

    // PostgreSQL lets the test hold the export still: its first read of usage (the raw events, or the
    // rollups' member sums for a whole day of the enterprise's zone) waits for the test's table locks,
    // so the signal always comes mid-export, the partial file already there.
    it.runIf(dialect === "postgres")("Ctrl-C (SIGINT) mid-export removes the partial file at once and exits 1 naming the signal", async () => {
      const out = join(dir, "stopped.csv");
      const partials = () => readdirSync(dir).filter((name) => name.startsWith("stopped.csv.partial-"));
      const holder = new pg.Client({ connectionString: svc.databaseUrl });
      await holder.connect();
      try {
        await holder.query("begin");
        await holder.query("lock table usage_event, usage_rollup_members in access exclusive mode");
        const child = cliChild([...base(), "--out", out]);
        const stderr: Buffer[] = [];
        child.stderr!.on("data", (chunk: Buffer) => stderr.push(chunk));
        const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
        await vi.waitFor(async () => {
          expect(partials()).toHaveLength(1);
          const { rows } = await holder.query(
            "select count(*)::int as n from pg_locks where relation in ('usage_event'::regclass, 'usage_rollup_members'::regclass) and not granted");
          expect(rows[0].n).toBe(1);
        }, { timeout: 45_000, interval: 20 });
        child.kill("SIGINT");
        // Gone while the export's read still waits: the stop does not wait for the database.
        await vi.waitFor(() => expect(partials()).toEqual([]), { timeout: 5_000, interval: 20 });
        await holder.query("commit");
        expect(await exited).toBe(1);
        expect(Buffer.concat(stderr).toString("utf8").trim()).toBe(`error: stopped by SIGINT after 0 rows: ${out} was not written`);
        expect(existsSync(out)).toBe(false);
        expect(readdirSync(dir).filter((name) => name.includes("partial"))).toEqual([]);
      } finally {
        await holder.end();
      }
    }, 90_000);

    it("over an existing --out the export keeps the file's permissions (it was renamed over it as 0644)", async () => {
      const out = join(dir, "kept-private.csv");
      writeFileSync(out, "old\n", { mode: 0o600 });
      chmodSync(out, 0o600);
      const run = await cli([...base(), "--out", out]);
      expect(run.code).toBe(0);
      expect([statSync(out).mode & 0o777, readFileSync(out, "utf8").startsWith("date,")]).toStrictEqual([0o600, true]);
    });

    it("refuses an --out that is a link, and leaves the link and its target as they were (the export is renamed over --out)", async () => {
      const target = join(dir, "link-target.txt");
      writeFileSync(target, "kept\n");
      const link = join(dir, "link.csv");
      symlinkSync(target, link);
      const run = await cli([...base(), "--out", link]);
      expect([run.code, run.stderr.trim()]).toStrictEqual([2, `error: --out: cannot write ${link}: it is not a regular file (a device, a link or a pipe); name a new file`]);
      expect(lstatSync(link).isSymbolicLink()).toBe(true);
      expect(readFileSync(target, "utf8")).toBe("kept\n");
      // A pipe (as a device would be) is refused the same way, and stays a pipe.
      const pipe = join(dir, "pipe.csv");
      execFileSync("mkfifo", [pipe]);
      const piped = await cli([...base(), "--out", pipe]);
      expect([piped.code, piped.stderr.trim()]).toStrictEqual([2, `error: --out: cannot write ${pipe}: it is not a regular file (a device, a link or a pipe); name a new file`]);
      expect(lstatSync(pipe).isFIFO()).toBe(true);
    });

    it.each([
      ["an unknown enterprise", ["--enterprise", "nope"], /^error: --enterprise: enterprise "nope" does not exist/],
      ["a date that does not exist", ["--from", "2025-02-30"], /^error: --from: "2025-02-30" is not a date YYYY-MM-DD/],
      ["an unknown time zone", ["--time-zone", "Mars/Olympus"], /^error: --time-zone: "Mars\/Olympus" is not an IANA time zone name/],
      ["an unwritable --out", ["--out", "/nonexistent-dir/usage.csv"], /^error: --out: cannot write \/nonexistent-dir\/usage.csv: its directory does not exist/],
      ["an --out in a directory that takes no file", ["--out", "/proc/version"], /^error: --out: cannot write \/proc\/version: its directory takes no new file/],
      ["an unknown --format", ["--format", "xml"], /^error: --format: "xml" is not one of csv, ndjson/],
    ])("prints one error line and exits non-zero for %s, leaving no file", async (_name, args, message) => {
      const out = join(dir, `failed-${args[0]}.csv`);
      const run = await cli([...base(), ...(args.includes("--out") ? [] : ["--out", out]), ...args]);
      expect(run.code).not.toBe(0);
      expect(run.stderr.trim().split("\n")).toHaveLength(1);
      expect(run.stderr).toMatch(message);
      expect(existsSync(out)).toBe(false);
      expect(readdirSync(dir).filter((name) => name.includes("partial"))).toEqual([]);
    });
  });
});
