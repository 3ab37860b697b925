// End to end: GET /metrics on the service's port. Calls made on every transport move the call counter
// and the latency histogram by exactly those calls; usage ingestion counts recorded and duplicate
// events; a write that waits for the store's write lock is a lock wait, one that waits past the busy
// timeout a busy store error. Token mode refuses a wrong or missing token (401); off mode is 404.
import { ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import SqliteDatabase from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DepartmentService } from "../../gen/enterprise_admin/v1/department_pb.js";
import { UsageService } from "../../gen/enterprise_admin/v1/usage_pb.js";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { loadMetricsAccess } from "../../src/config.js";
import { dialects, type DialectName } from "../helpers/databases.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { holdWriteLock as holdStoreWriteLock } from "../helpers/write-lock.js";

const REFLECTION = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
const METRICS_TOKEN = "scrape-token-0123456789abcdef";
const BATCH_GET = "/enterprise_admin.v1.DepartmentService/BatchGetDepartments";
const RECORD_PROCEDURE = "/enterprise_admin.v1.UsageService/RecordUsageEvents";
const HEALTH_CHECK = "/grpc.health.v1.Health/Check";
const REST_BATCH_GET = "/openapi/v1/departments/batch-get";
const REST_RECORD = "/openapi/v1/usage/events/batch-record";
/** The store's busy timeout in these tests: long enough for a write to reach the held lock on a loaded machine. */
const BUSY_TIMEOUT_MS = 1500;

type Labels = Record<string, string>;
interface Sample {
  name: string;
  labels: Labels;
  value: number;
}

/** The samples of a Prometheus text exposition (version 0.0.4). */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not an exposition line: ${line}`);
    const labels: Labels = {};
    for (const [, name, value] of (match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[name!] = value!.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    }
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The sum of the samples named `name` whose labels include `labels`. */
function total(samples: readonly Sample[], name: string, labels: Labels = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/** `authorization` null sends none. */
async function scrape(baseUrl: string, authorization: string | null = `Bearer ${METRICS_TOKEN}`) {
  const reply = await fetch(`${baseUrl}/metrics`, { headers: authorization ? { authorization } : {} });
  return { status: reply.status, contentType: reply.headers.get("content-type"), wwwAuthenticate: reply.headers.get("www-authenticate"), text: await reply.text() };
}

async function samplesOf(baseUrl: string): Promise<Sample[]> {
  const reply = await scrape(baseUrl);
  expect(reply.status).toBe(200);
  return parseExposition(reply.text);
}

function usageEvents(prefix: string, count: number) {
  return Array.from({ length: count }, (_, i) => ({
    event_id: `${prefix}-${i}`, user_id: "7001", model_name: "model-a", model_type: "Chat", model_source: "Builtin",
    timestamp: 1_735_689_600 + i, input_tokens: 100, output_tokens: 7, basic_amount: "0.001000", pay_go_amount: "0",
  }));
}

async function postJson(baseUrl: string, path: string, body: unknown, token: string | undefined) {
  const reply = await fetch(`${baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: reply.status, body: (await reply.json()) as { code: number; data: unknown } };
}

describe.each(dialects)("metrics behind a token on %s", (dialect: DialectName) => {
  let svc: TestService;

  beforeAll(async () => {
    // A short busy timeout, so the busy case below is quick (read when the store opens).
    svc = await startTestService(dialect, { METRICS_TOKEN, STORE_BUSY_TIMEOUT_MS: String(BUSY_TIMEOUT_MS) });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it("a wrong or missing token gets 401 with code 1002 and no figures; the right one gets the exposition", async () => {
    for (const authorization of [null, "Bearer wrong-token-0123456789abcdef", `Bearer ${METRICS_TOKEN}x`, `Basic ${METRICS_TOKEN}`]) {
      const reply = await scrape(svc.baseUrl, authorization);
      expect(reply.status).toBe(401);
      expect(reply.wwwAuthenticate).toBe('Bearer realm="metrics"');
      expect(JSON.parse(reply.text)).toMatchObject({ code: 1002, data: null });
      expect(reply.text).not.toContain("enterprise_admin_");
    }
    // An access token of the API is no metrics token.
    expect((await scrape(svc.baseUrl, `Bearer ${await svc.token()}`)).status).toBe(401);
    const reply = await scrape(svc.baseUrl);
    expect(reply.status).toBe(200);
    expect(reply.contentType).toBe("text/plain; version=0.0.4; charset=utf-8");
    const samples = parseExposition(reply.text);
    // The process's default metrics, and the store's series at 0 from the start.
    expect(total(samples, "process_cpu_user_seconds_total")).toBeGreaterThan(0);
    expect(total(samples, "nodejs_heap_size_used_bytes")).toBeGreaterThan(0);
    expect(samples.filter((s) => s.name === "enterprise_admin_store_errors_total").map((s) => s.labels.kind).sort()).toEqual(["busy", "error", "full", "unreachable"]);
    expect(samples.some((s) => s.name === "enterprise_admin_store_usage_ingestions")).toBe(true);
    // The token never reaches the log.
    expect(svc.logs.join("\n")).not.toContain(METRICS_TOKEN);
  });

  it("POST /metrics is 405 with Allow: GET", async () => {
    const reply = await fetch(`${svc.baseUrl}/metrics`, { method: "POST", headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(reply.status).toBe(405);
    expect(reply.headers.get("allow")).toBe("GET");
    expect(await reply.json()).toMatchObject({ code: 4005 });
  });

  it("calls on REST, Connect (JSON and binary), gRPC and gRPC-Web move the counters by exactly those calls", async () => {
    const token = await svc.token(["departments:read"]);
    const headers = { authorization: `Bearer ${token}` };
    const before = await samplesOf(svc.baseUrl);

    expect((await postJson(svc.baseUrl, REST_BATCH_GET, { department_ids: ["0"] }, token)).status).toBe(200);
    expect((await postJson(svc.baseUrl, REST_BATCH_GET, { department_ids: ["110"] }, token)).status).toBe(200);
    expect((await postJson(svc.baseUrl, REST_BATCH_GET, { department_ids: ["110"] }, undefined)).status).toBe(401);
    expect((await postJson(svc.baseUrl, REST_BATCH_GET, { department_ids: [] }, token)).body.code).toBe(4001);
    const connectJson = createClient(DepartmentService, createConnectTransport({ baseUrl: svc.baseUrl, httpVersion: "1.1" }));
    await connectJson.batchGetDepartments({ departmentIds: ["0"] }, { headers });
    const connectBinary = createClient(DepartmentService, createConnectTransport({ baseUrl: svc.baseUrl, httpVersion: "2", useBinaryFormat: true }));
    await connectBinary.batchGetDepartments({ departmentIds: ["0"] }, { headers });
    const grpc = createClient(DepartmentService, createGrpcTransport({ baseUrl: svc.baseUrl }));
    await grpc.batchGetDepartments({ departmentIds: ["0"] }, { headers });
    await grpc.batchGetDepartments({ departmentIds: ["0"] }, { headers });
    const refused = await grpc.batchGetDepartments({ departmentIds: ["0"] }).catch((error: unknown) => error);
    expect(ConnectError.from(refused).rawMessage).toContain("access token missing");
    const grpcWeb = createClient(DepartmentService, createGrpcWebTransport({ baseUrl: svc.baseUrl, httpVersion: "1.1" }));
    await grpcWeb.batchGetDepartments({ departmentIds: ["0"] }, { headers });
    await createClient(Health, createGrpcTransport({ baseUrl: svc.baseUrl })).check({ service: "" });
    await fetch(`${svc.baseUrl}/healthz`); // not a call of a procedure: not counted

    const after = await samplesOf(svc.baseUrl);
    const moved = (name: string, labels: Labels) => total(after, name, labels) - total(before, name, labels);
    const calls = (transport: string, code: number, procedure = BATCH_GET) => moved("enterprise_admin_calls_total", { procedure, transport, code: String(code) });
    expect({
      rest: calls("rest", 0), restNoToken: calls("rest", 1002), restBadInput: calls("rest", 4001),
      connect: calls("connect", 0), grpc: calls("grpc", 0), grpcNoToken: calls("grpc", 1002), grpcWeb: calls("grpc-web", 0),
      health: calls("grpc", 0, HEALTH_CHECK),
    }).toEqual({ rest: 2, restNoToken: 1, restBadInput: 1, connect: 2, grpc: 2, grpcNoToken: 1, grpcWeb: 1, health: 1 });
    expect(moved("enterprise_admin_calls_total", {})).toBe(11);
    // The histogram counts the same calls, by procedure and transport.
    const timed = (transport: string) => moved("enterprise_admin_call_duration_seconds_count", { procedure: BATCH_GET, transport });
    expect({ rest: timed("rest"), connect: timed("connect"), grpc: timed("grpc"), grpcWeb: timed("grpc-web") }).toEqual({ rest: 4, connect: 2, grpc: 3, grpcWeb: 1 });
    expect(moved("enterprise_admin_call_duration_seconds_bucket", { procedure: BATCH_GET, transport: "rest", le: "+Inf" })).toBe(4);
    expect(moved("enterprise_admin_call_duration_seconds_sum", { procedure: BATCH_GET, transport: "rest" })).toBeGreaterThan(0);
  });

  it("calls connect-es refuses before any handler runs count, and log, with the error table's code, never as successes", async () => {
    const token = await svc.token(["departments:read"]);
    const before = await samplesOf(svc.baseUrl);
    const logsBefore = svc.logs.length;
    const envelope = (flags: number, declared: number, data: Buffer) => Buffer.concat([Buffer.from([flags, 0, 0, 0, declared]), data]);
    const post = (contentType: string, body: Buffer, extra: Record<string, string> = {}) => fetch(`${svc.baseUrl}${BATCH_GET}`, {
      method: "POST", body, headers: { authorization: `Bearer ${token}`, "content-type": contentType, ...extra },
    }).then(async (reply) => ({ status: reply.status, text: Buffer.from(await reply.arrayBuffer()).toString("latin1") }));

    // Connect GET of a method that is not idempotent: 405.
    const get = await fetch(`${svc.baseUrl}${BATCH_GET}?connect=v1&encoding=json&message=%7B%7D`, { headers: { authorization: `Bearer ${token}` } });
    expect(get.status).toBe(405);
    // gRPC-Web: an envelope that says 16 bytes and brings 3; a grpc-timeout that is not a timeout.
    expect((await post("application/grpc-web+proto", envelope(0, 16, Buffer.from("abc")))).text).toMatch(/grpc-status: ?3/);
    expect((await post("application/grpc-web+proto", envelope(0, 0, Buffer.alloc(0)), { "grpc-timeout": "abc" })).text).toMatch(/grpc-status: ?3/);
    // A Connect stream's incomplete envelope, on a server-streaming method.
    const exported = await fetch(`${svc.baseUrl}/enterprise_admin.v1.UsageService/ExportUsage`, {
      method: "POST", body: envelope(0, 16, Buffer.from("abc")),
      headers: { authorization: `Bearer ${await svc.token(["statistics:read"])}`, "content-type": "application/connect+proto" },
    });
    expect(Buffer.from(await exported.arrayBuffer()).toString("latin1")).toContain("invalid_argument");
    // Refusals no protocol code fits: a bidirectional stream over HTTP/1.1 (505), Health's not_found for a service it does not know.
    const reflection = await fetch(`${svc.baseUrl}${REFLECTION}`, { method: "POST", body: envelope(0, 0, Buffer.alloc(0)), headers: { "content-type": "application/connect+proto" } });
    expect(reflection.status).toBe(505);
    const health = await fetch(`${svc.baseUrl}${HEALTH_CHECK}`, { method: "POST", body: JSON.stringify({ service: "no.such.Service" }), headers: { "content-type": "application/json" } });
    expect([health.status, ((await health.json()) as { code: string }).code]).toStrictEqual([404, "not_found"]);

    const after = await samplesOf(svc.baseUrl);
    const moved = (labels: Labels) => total(after, "enterprise_admin_calls_total", labels) - total(before, "enterprise_admin_calls_total", labels);
    expect({
      connect405: moved({ procedure: BATCH_GET, transport: "connect", code: "4005" }),
      grpcWeb4001: moved({ procedure: BATCH_GET, transport: "grpc-web", code: "4001" }),
      stream4001: moved({ procedure: "/enterprise_admin.v1.UsageService/ExportUsage", transport: "connect", code: "4001" }),
      reflection4001: moved({ procedure: REFLECTION, transport: "connect", code: "4001" }),
      health4001: moved({ procedure: HEALTH_CHECK, transport: "connect", code: "4001" }),
      successes: moved({ code: "0" }),
    }).toEqual({ connect405: 1, grpcWeb4001: 2, stream4001: 1, reflection4001: 1, health4001: 1, successes: 0 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const logged = svc.logs.slice(logsBefore).map((line) => JSON.parse(line) as { procedure?: string; code?: number }).filter((line) => line.procedure);
    expect(logged.map((line) => line.code)).toEqual([4005, 4001, 4001, 4001, 4001, 4001]);
  });

  it("usage ingestion counts recorded and duplicate events, and the store's ingestions move by the batches", async () => {
    const token = await svc.token(["usage:write"]);
    const before = await samplesOf(svc.baseUrl);
    const rest = await postJson(svc.baseUrl, REST_RECORD, { events: usageEvents("m", 3) }, token);
    expect(rest).toMatchObject({ status: 200, body: { data: { recorded: 3, duplicates: 0 } } });
    const usage = createClient(UsageService, createGrpcTransport({ baseUrl: svc.baseUrl }));
    const again = await usage.recordUsageEvents({
      events: usageEvents("m", 5).map((e) => ({
        eventId: e.event_id, userId: e.user_id, modelName: e.model_name, modelType: e.model_type, modelSource: e.model_source,
        timestamp: BigInt(e.timestamp), inputTokens: BigInt(e.input_tokens), outputTokens: BigInt(e.output_tokens),
        basicAmount: e.basic_amount, payGoAmount: e.pay_go_amount,
      })),
    }, { headers: { authorization: `Bearer ${token}` } });
    expect(again).toMatchObject({ recorded: 2, duplicates: 3 });
    // A batch refused whole (an unknown member) records nothing and counts nothing.
    expect((await postJson(svc.baseUrl, REST_RECORD, { events: [{ ...usageEvents("x", 1)[0], user_id: "nobody" }] }, token)).status).toBe(400);

    const after = await samplesOf(svc.baseUrl);
    const moved = (name: string, labels: Labels = {}) => total(after, name, labels) - total(before, name, labels);
    expect(moved("enterprise_admin_usage_events_recorded_total")).toBe(5);
    expect(moved("enterprise_admin_usage_events_duplicate_total")).toBe(3);
    expect(moved("enterprise_admin_store_usage_ingestions")).toBe(2);
    expect(moved("enterprise_admin_calls_total", { procedure: RECORD_PROCEDURE, transport: "grpc", code: "0" })).toBe(1);
    expect(moved("enterprise_admin_calls_total", { procedure: RECORD_PROCEDURE, transport: "rest", code: "4001" })).toBe(1);
  });

  const holdWriteLock = () => holdStoreWriteLock(dialect, svc.databaseUrl);

  /**
   * Resolves once a write of the server waits for the held lock. PostgreSQL shows the waiting lock
   * request; SQLite shows nothing of a writer that retries BEGIN IMMEDIATE, so there the write gets a
   * third of the busy timeout to reach it.
   */
  async function writerWaits(): Promise<void> {
    if (dialect === "sqlite") return new Promise((resolve) => setTimeout(resolve, BUSY_TIMEOUT_MS / 3));
    const client = new pg.Client({ connectionString: svc.databaseUrl });
    await client.connect();
    try {
      for (;;) {
        const { rows } = await client.query<{ n: string }>("select count(*) as n from pg_locks where locktype = 'advisory' and not granted");
        if (Number(rows[0]!.n) > 0) return;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    } finally {
      await client.end();
    }
  }

  it("a write that waits for the write lock is a lock wait; one that waits past the busy timeout is a busy store error", async () => {
    const token = await svc.token(["usage:write"]);
    const before = await samplesOf(svc.baseUrl);

    // Released while the write waits: it gets the lock and succeeds.
    let release = await holdWriteLock();
    const waiting = postJson(svc.baseUrl, REST_RECORD, { events: usageEvents("w", 2) }, token);
    await writerWaits();
    await release();
    expect(await waiting).toMatchObject({ status: 200, body: { data: { recorded: 2 } } });

    // Held past the busy timeout: 503.
    release = await holdWriteLock();
    try {
      expect(await postJson(svc.baseUrl, REST_RECORD, { events: usageEvents("t", 2) }, token)).toMatchObject({ status: 503, body: { code: 5030 } });
    } finally {
      await release();
    }

    const after = await samplesOf(svc.baseUrl);
    const moved = (name: string, labels: Labels = {}) => total(after, name, labels) - total(before, name, labels);
    expect(moved("enterprise_admin_store_lock_waits_total", { outcome: "acquired" })).toBe(1);
    expect(moved("enterprise_admin_store_lock_waits_total", { outcome: "timeout" })).toBe(1);
    expect(moved("enterprise_admin_store_lock_wait_seconds_count")).toBe(2);
    // At least the busy timeout, plus what the first write waited.
    expect(moved("enterprise_admin_store_lock_wait_seconds_sum")).toBeGreaterThan(BUSY_TIMEOUT_MS / 1000);
    expect(moved("enterprise_admin_store_errors_total", { kind: "busy" })).toBe(1);
    expect(moved("enterprise_admin_store_errors_total", { kind: "error" })).toBe(0);
    expect(moved("enterprise_admin_calls_total", { procedure: RECORD_PROCEDURE, transport: "rest", code: "5030" })).toBe(1);
    expect(moved("enterprise_admin_usage_events_recorded_total")).toBe(2);
  });
});

describe.runIf(dialects.includes("sqlite"))("metrics open and off", () => {
  let open: TestService;
  let off: TestService;
  beforeAll(async () => {
    [open, off] = await Promise.all([startTestService("sqlite"), startTestService("sqlite", { METRICS: "off", METRICS_TOKEN })]);
  });
  afterAll(async () => {
    await Promise.all([open?.close(), off?.close()]);
  });

  it("open (the default without METRICS_TOKEN) needs no token", async () => {
    const reply = await scrape(open.baseUrl, null);
    expect(reply.status).toBe(200);
    expect(parseExposition(reply.text).some((s) => s.name === "enterprise_admin_usage_events_recorded_total")).toBe(true);
  });

  it("a call that fails on a database error (a table gone) is a store error of kind error, and a 500", async () => {
    const token = await open.token(["environments:read"]);
    const other = new SqliteDatabase(open.databaseUrl);
    other.exec("alter table environment_config rename to environment_config_gone");
    other.close();
    const reply = await fetch(`${open.baseUrl}/api/v1/environment_configs`, { headers: { authorization: `Bearer ${token}` } });
    expect(reply.status).toBe(500);
    const samples = parseExposition((await scrape(open.baseUrl, null)).text);
    expect(total(samples, "enterprise_admin_store_errors_total", { kind: "error" })).toBe(1);
    expect(total(samples, "enterprise_admin_calls_total", { transport: "rest", code: "2001" })).toBe(1);
  });

  it("off is 404, as an unknown route, with or without the token", async () => {
    for (const authorization of [null, `Bearer ${METRICS_TOKEN}`]) {
      const reply = await scrape(off.baseUrl, authorization);
      expect(reply.status).toBe(404);
      expect(JSON.parse(reply.text)).toMatchObject({ code: 4004, message: "no route for GET /metrics" });
    }
  });
});

describe("METRICS and METRICS_TOKEN", () => {
  it("default to open without a token and to token with one", () => {
    expect(loadMetricsAccess({})).toEqual({ mode: "open" });
    expect(loadMetricsAccess({ METRICS_TOKEN })).toEqual({ mode: "token", token: METRICS_TOKEN });
    expect(loadMetricsAccess({ METRICS: "off", METRICS_TOKEN })).toEqual({ mode: "off" });
  });

  it("refuse an unknown mode, and token mode without a token of 16 printable characters, never quoting the token", () => {
    expect(() => loadMetricsAccess({ METRICS: "on" })).toThrow('METRICS: "on" is not one of off, open, token');
    expect(() => loadMetricsAccess({ METRICS: "token" })).toThrow("METRICS_TOKEN: METRICS=token needs a token of at least 16 printable characters without spaces");
    expect(() => loadMetricsAccess({ METRICS: "token", METRICS_TOKEN: "short-secret" })).toThrow(/^METRICS_TOKEN: (?!.*short-secret)/);
    expect(() => loadMetricsAccess({ METRICS_TOKEN: "has a space in it, long enough" })).toThrow(/^METRICS_TOKEN: /);
  });
});
