// End to end over a real port: every connection ends (half-sent headers, silence, idle keep-alive,
// idle HTTP/2 sessions, the connection cap) and every transport honours the call's deadline. The
// limits are shortened through the same environment variables an operator sets.
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorDetailSchema } from "../../gen/enterprise_admin/v1/errors_pb.js";
import { ExportUsageRequestSchema, QueryUserModelUsageRequestSchema, UsageService } from "../../gen/enterprise_admin/v1/usage_pb.js";
import { checkUsageEvent } from "../../src/domain/usage-event.js";
import { importUsage } from "../../src/operations/import-usage.js";
import { recordUsage } from "../../src/operations/record-usage.js";
import { UsageRepository } from "../../src/storage/usage-repository.js";
import { dialects } from "../helpers/databases.js";
import { scratchFolder } from "../helpers/scratch-folder.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { withThreadGaps } from "../helpers/thread-gaps.js";
import { accessLines, closedWithinMs, rawHttp, sessionClosed, socketClosed } from "../helpers/hostile-clients.js";

const LIMITS = { HEADERS_TIMEOUT_MS: "300", KEEP_ALIVE_TIMEOUT_MS: "300", IDLE_TIMEOUT_MS: "500", REQUEST_TIMEOUT_MS: "800" };
const BATCH_GET = "/openapi/v1/departments/batch-get";
const QUERY_CONNECT = "/enterprise_admin.v1.UsageService/QueryUserModelUsage";

/** A POST whose headers are sent and whose body is held back: the call waits while its deadline runs. */
function heldPost(port: number, path: string, headers: Record<string, string>): Promise<{ status: number; body: string; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path, method: "POST", agent: false, headers: { "content-type": "application/json", "content-length": "100", ...headers } });
    req.once("error", reject);
    req.once("response", (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (c: string) => (body += c));
      res.once("end", () => {
        req.destroy();
        resolve({ status: res.statusCode ?? 0, body, ms: performance.now() - started });
      });
    });
    req.flushHeaders();
  });
}

describe.each(dialects)("connections and deadlines (%s)", (dialect) => {
  let svc: TestService;
  let token = "";
  beforeAll(async () => {
    svc = await startTestService(dialect, LIMITS);
    token = await svc.token();
  }, 60_000);
  afterAll(async () => svc?.close());

  it("answers half-sent request headers with 408 and closes the connection after HEADERS_TIMEOUT_MS", async () => {
    const conn = rawHttp(svc.port);
    await conn.connected;
    conn.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    const { ms } = await socketClosed(conn.socket, 3_000);
    expect(conn.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(ms).toBeGreaterThanOrEqual(250);
  });

  it("closes a connection that sends nothing after HEADERS_TIMEOUT_MS", async () => {
    const conn = rawHttp(svc.port);
    await conn.connected;
    const { ms } = await socketClosed(conn.socket, 3_000);
    expect(ms).toBeGreaterThanOrEqual(250);
  });

  it("closes a connection that sends only part of the HTTP/2 preface after HEADERS_TIMEOUT_MS", async () => {
    const conn = rawHttp(svc.port);
    await conn.connected;
    conn.socket.write("PRI * HTTP/2.0\r\n");
    await socketClosed(conn.socket, 3_000);
    expect(conn.received()).toBe("");
  });

  it("closes an idle HTTP/1.1 keep-alive connection after KEEP_ALIVE_TIMEOUT_MS", async () => {
    const conn = rawHttp(svc.port);
    await conn.connected;
    conn.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    const { ms } = await socketClosed(conn.socket, 3_000);
    expect(conn.received()).toMatch(/^HTTP\/1\.1 200 /);
    expect(conn.received()).toMatch(/keep-alive/i);
    expect(ms).toBeGreaterThanOrEqual(250);
  });

  it("requests pipelined behind an answer that closes the connection are each logged once it closes (they stayed in flight for good)", async () => {
    const conn = rawHttp(svc.port);
    await conn.connected;
    // A body the route takes none of is refused at once, unread: that answer closes the connection.
    const pipelined = ["a", "b", "c"].map((id) => `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: piped-${id}\r\n\r\n`).join("");
    conn.socket.write(`PUT /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: piped-put\r\nContent-Length: 5\r\n\r\nhello${pipelined}`);
    await socketClosed(conn.socket, 3_000);
    expect(conn.received()).toMatch(/^HTTP\/1\.1 405 [^]*connection: close/i);
    const logged = () => accessLines(svc.logs).filter((l) => String(l.request_id).startsWith("piped-")).map((l) => [l.request_id, l.status]);
    // Each request Node took from the connection is logged, once: the ones it never answered as their caller's loss (499).
    await expect.poll(() => logged().length, { timeout: 2_000 }).toBe(4);
    expect(logged().sort()).toStrictEqual([["piped-a", 499], ["piped-b", 499], ["piped-c", 499], ["piped-put", 405]]);
  });

  it("a request sent on after an answer that closed the connection under an unfinished body is not carried out: the refusal read, the rest dropped", async () => {
    // Half-open allowed, as a client that goes on writing after the server's FIN (Python's http.client, say).
    const socket = net.connect({ port: svc.port, host: "127.0.0.1", allowHalfOpen: true });
    let text = "";
    socket.setEncoding("utf8").on("data", (chunk: string) => (text += chunk)).on("error", () => {});
    await new Promise((resolve) => socket.once("connect", resolve));
    const conn = { socket, received: () => text };
    const name = `after-close-${Date.now()}`;
    const create = JSON.stringify({ name });
    // No token, and only the headers of a 22-byte body: refused at once with 401, the connection closing in stages.
    conn.socket.write("POST /api/v1/environment_configs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 22\r\n\r\n");
    await expect.poll(() => conn.received(), { timeout: 3_000 }).toMatch(/^HTTP\/1\.1 401 [^]*connection: close/i);
    // The body, then a create with a valid token: still read by the server (it drops what comes), never carried out.
    conn.socket.write(`{"name":"not-a-token"}POST /api/v1/environment_configs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
      `X-Request-Id: ${name}\r\nContent-Type: application/json\r\nContent-Length: ${create.length}\r\n\r\n${create}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
    socket.end();
    await socketClosed(conn.socket, 5_000);
    expect(conn.received().match(/^HTTP\/1\.1 /gm)).toHaveLength(1);
    const list = await fetch(`${svc.baseUrl}/api/v1/environment_configs?page_size=100`, { headers: { authorization: `Bearer ${token}` } });
    expect(JSON.stringify(await list.json())).not.toContain(name);
    expect(accessLines(svc.logs).filter((l) => l.request_id === name)).toStrictEqual([]);
  });

  it("sends GOAWAY to an HTTP/2 session without open streams and closes it after IDLE_TIMEOUT_MS", async () => {
    const session = http2.connect(svc.baseUrl);
    session.on("error", () => {});
    let goaway: number | undefined;
    session.once("goaway", (code) => (goaway = code));
    const stream = session.request({ ":path": "/healthz" });
    stream.resume();
    await new Promise((resolve) => stream.once("end", resolve));
    const { ms } = await sessionClosed(session, 3_000);
    expect(goaway).toBe(http2.constants.NGHTTP2_NO_ERROR);
    expect(ms).toBeGreaterThanOrEqual(400);
  });

  it("a connect-es client that closes idle connections before IDLE_TIMEOUT_MS, as the README's example does, has no call refused at the server's idle close", async () => {
    // Each client's second call goes out around the moment the server's idle timer (500 ms) fires: without the
    // client's own shorter idle timeout, some are refused (REFUSED_STREAM, which connect-es reports as internal).
    const outcomes = await Promise.all(Array.from({ length: 40 }, async (_, i) => {
      const transport = createGrpcTransport({ baseUrl: svc.baseUrl, idleConnectionTimeoutMs: 400 });
      const client = createClient(UsageService, transport);
      const call = () => client.queryUserModelUsage(create(QueryUserModelUsageRequestSchema, { startTime: 0n, endTime: 86_400n, userIds: ["7001"] }),
        { headers: { authorization: `Bearer ${token}` } }).then(() => "ok", (e: unknown) => `${Code[ConnectError.from(e).code]} ${ConnectError.from(e).rawMessage}`);
      expect(await call()).toBe("ok");
      await new Promise((resolve) => setTimeout(resolve, 490 + i * 0.5));
      return call();
    }));
    expect(outcomes.filter((outcome) => outcome !== "ok")).toStrictEqual([]);
  });

  it("answers a REST call still running after REQUEST_TIMEOUT_MS with 504 and code 5040", async () => {
    const res = await heldPost(svc.port, BATCH_GET, { authorization: `Bearer ${token}` });
    expect(res.status).toBe(504);
    expect(JSON.parse(res.body)).toMatchObject({ code: 5040, data: null });
    expect(JSON.parse(res.body).message).toMatch(/deadline exceeded/);
    expect(res.ms).toBeGreaterThanOrEqual(750);
    expect(res.ms).toBeLessThan(10_000); // far below the 60 s default: the configured timeout fired (loose for a loaded CI machine)
  });

  it("answers a REST call whose headers arrived slowly with 504 when its deadline passes, not Node's 408", async () => {
    // Node's own request clock starts at the first header byte, the call's deadline once the headers
    // are in: 250 ms later here. Node's limit must not end the call before its deadline does.
    const conn = rawHttp(svc.port);
    await conn.connected;
    const started = performance.now();
    conn.socket.write(`POST ${BATCH_GET} HTTP/1.1\r\nHost: x\r\n`);
    await new Promise((resolve) => setTimeout(resolve, 250));
    conn.socket.write(`Authorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`);
    await socketClosed(conn.socket, 5_000);
    const ms = performance.now() - started;
    expect(conn.received()).toMatch(/^HTTP\/1\.1 504 /);
    expect(conn.received()).toMatch(/^connection: close\r$/im); // the body never came: the connection is not kept
    expect(conn.received()).toContain('"code":5040');
    expect(ms).toBeGreaterThanOrEqual(1_000); // 250 ms of headers, then the 800 ms deadline
    expect(ms).toBeLessThan(1_800); // closed with the answer, not by Node's limit (300 + 800 + 1000 ms)
  });

  it("answers a Connect JSON call past its connect-timeout-ms with deadline_exceeded (HTTP 504) and detail 5040", async () => {
    const res = await heldPost(svc.port, QUERY_CONNECT, { authorization: `Bearer ${token}`, "connect-protocol-version": "1", "connect-timeout-ms": "200" });
    expect(res.status).toBe(504);
    const body = JSON.parse(res.body) as { code: string; details: { value: string }[] };
    expect(body.code).toBe("deadline_exceeded");
    expect(body.details).toHaveLength(1);
    expect(res.ms).toBeGreaterThanOrEqual(150);
    expect(res.ms).toBeLessThan(700); // the caller's deadline, not the server's 800 ms
  });

  it("answers a gRPC call whose body is still incomplete at its grpc-timeout with deadline_exceeded and ends the stream", async () => {
    const session = http2.connect(svc.baseUrl);
    session.on("error", () => {});
    const started = performance.now();
    const stream = session.request({
      ":method": "POST", ":path": QUERY_CONNECT, "content-type": "application/grpc", te: "trailers",
      "grpc-timeout": "200m", authorization: `Bearer ${token}`,
    }, { endStream: false });
    stream.on("error", () => {});
    const message = toBinary(QueryUserModelUsageRequestSchema, create(QueryUserModelUsageRequestSchema, { userIds: ["7001"], endTime: 10n }));
    const frame = Buffer.alloc(5 + message.length);
    frame.writeUInt32BE(message.length + 10, 1); // announces more bytes than are ever sent
    Buffer.from(message).copy(frame, 5);
    stream.write(frame);
    let status: unknown;
    stream.once("trailers", (trailers) => (status = trailers["grpc-status"]));
    stream.resume();
    await new Promise((resolve) => stream.once("close", resolve));
    const ms = performance.now() - started;
    session.destroy();
    expect(status).toBe(String(Code.DeadlineExceeded));
    expect(ms).toBeGreaterThanOrEqual(150);
    expect(ms).toBeLessThan(700); // the caller's deadline, not the server's 800 ms
  });

  it.skipIf(dialect !== "postgres")("stops an ingestion waiting for the store when its gRPC deadline passes: deadline_exceeded with 5040, nothing written", async () => {
    // Another ingestion holds the store's ingestion lock (usage-repository.ts) for 1.5 s.
    const holder = new pg.Client({ connectionString: svc.databaseUrl });
    await holder.connect();
    await holder.query("begin");
    await holder.query("select pg_advisory_xact_lock(72001)");
    const client = createClient(UsageService, createGrpcTransport({ baseUrl: svc.baseUrl }));
    const event = {
      eventId: "deadline-1", userId: "7001", modelName: "m", modelType: "Chat", modelSource: "Builtin",
      timestamp: 1_730_000_000n, inputTokens: 1n, outputTokens: 1n, basicAmount: "0.000001", payGoAmount: "0",
    };
    const release = setTimeout(() => void holder.query("commit"), 1_500);
    // The deadline travels as the header alone: the client sets no timer of its own, so the answer it
    // gets is the server's.
    const error = await client.recordUsageEvents({ events: [event] }, { headers: { authorization: `Bearer ${token}`, "grpc-timeout": "300m" } })
      .then(() => undefined, (e: unknown) => ConnectError.from(e));
    await new Promise((resolve) => setTimeout(resolve, 2_000)); // the lock is released; the server's ingestion has run on
    clearTimeout(release);
    await holder.end();
    expect(error?.code).toBe(Code.DeadlineExceeded);
    expect(error?.findDetails(ErrorDetailSchema).map((d) => d.code)).toEqual([5040]);
    const stored = await svc.database.db.selectFrom("usage_event").select("event_id").where("event_id", "=", "deadline-1").execute();
    expect(stored).toEqual([]);
    expect(accessLines(svc.logs).filter((l) => l.procedure === "/enterprise_admin.v1.UsageService/RecordUsageEvents").map((l) => l.code)).toContain(5040);
  }, 15_000);

  it("cuts off an export whose caller stopped reading a second after its deadline, logged as 5040 (it was held until the caller left)", async () => {
    // 2,000 rows (a member, 20 models, 100 days): far more than the 16 KB window the client below grants and never renews.
    const day0 = 1_735_689_600;
    const events = Array.from({ length: 2000 }, (_, i) => ({
      event_id: `stall-${i}`, user_id: "7001", model_name: `stall-model-${i % 20}`, model_type: "Chat", model_source: "Builtin",
      timestamp: day0 + Math.floor(i / 20) * 86_400 + 60, input_tokens: 1, output_tokens: 1, basic_amount: "0.000001", pay_go_amount: "0",
    }));
    // Recorded below the API, whose 800 ms deadline a loaded machine can miss: the export is what this test times.
    const labelled = events.map((event, i) => ({ event: checkUsageEvent(event, `event ${i}`), where: `event ${i}` }));
    for (let at = 0; at < labelled.length; at += 1000) await recordUsage(new UsageRepository(svc.database), "acme", labelled.slice(at, at + 1000));
    const window = { start_time: day0, end_time: day0 + 101 * 86_400 };
    // A short export first, so that the timed ones run warm code: a cold one could pass its deadline before its first row. Only its
    // warming matters: on a loaded machine it may be cut at the deadline itself.
    await fetch(`${svc.baseUrl}/openapi/v1/statistics/usage-export?start_time=${day0}&end_time=${day0 + 2 * 86_400}&format=ndjson`,
      { headers: { authorization: `Bearer ${token}` } }).then((res) => res.text()).catch(() => "");
    const grpcMessage = toBinary(ExportUsageRequestSchema, create(ExportUsageRequestSchema, { startTime: BigInt(window.start_time), endTime: BigInt(window.end_time) }));
    const envelope = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), grpcMessage]);
    envelope.writeUInt32BE(grpcMessage.length, 1);
    const stalls = [
      { transport: "rest", headers: { ":method": "GET", ":path": `/openapi/v1/statistics/usage-export?start_time=${window.start_time}&end_time=${window.end_time}&format=ndjson` } },
      { transport: "grpc", headers: { ":method": "POST", ":path": "/enterprise_admin.v1.UsageService/ExportUsage", "content-type": "application/grpc", te: "trailers" }, body: envelope },
    ];
    for (const { transport, headers, body } of stalls) {
      const session = http2.connect(svc.baseUrl, { settings: { initialWindowSize: 16_384 } });
      session.on("error", () => {});
      const stream = session.request({ ...headers, authorization: `Bearer ${token}`, "x-request-id": `stalled-${transport}` });
      stream.on("error", () => {});
      stream.pause(); // read nothing: the window is never renewed
      stream.end(body);
      const started = performance.now();
      const { ms } = await closedWithinMs(stream, 6_000);
      expect(ms, transport).toBeLessThan(800 + 1000 + 2000);
      expect(ms, transport).toBeGreaterThan(700);
      session.destroy();
      await expect.poll(() => accessLines(svc.logs).find((l) => l.request_id === `stalled-${transport}`), { timeout: 2000 })
        .toMatchObject({ status: 200, code: 5040, procedure: "/enterprise_admin.v1.UsageService/ExportUsage" });
      expect(performance.now() - started).toBeLessThan(6_000);
    }
  });
});

// The server's default request timeout (60 s): the deadline that passes is the caller's, while the
// same calls without one finish even on a loaded machine.
describe.each(dialects)("deadlines of work that holds the event loop (%s)", (dialect) => {
  const dir = scratchFolder("eadmin-long-report-");
  let svc: TestService;
  let token = "";
  beforeAll(async () => {
    svc = await startTestService(dialect);
    token = await svc.token();
  }, 60_000);
  afterAll(async () => svc?.close());

  it("answers 504 with 5040, not 200, when a call's work held the event loop past the caller's deadline", async () => {
    // SQLite answers synchronously: a report runs to its end without yielding, so the deadline's
    // timer has no turn before the answer would go out. 1,000 events over 100 days make it last.
    const end = 1_780_000_000;
    const events = Array.from({ length: 1_000 }, (_, i) => ({
      event_id: `held-${i}`, user_id: i % 2 ? "7001" : "7002", model_name: `m${i % 7}`, model_type: "Chat", model_source: "Builtin",
      timestamp: end - i * 8_640, input_tokens: i, output_tokens: 1, basic_amount: "0.000001", pay_go_amount: "0",
    }));
    const recorded = await fetch(`${svc.baseUrl}/openapi/v1/usage/events/batch-record`, {
      method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ events }),
    });
    expect(recorded.status).toBe(200);
    const report = { start_time: end - 100 * 86_400, end_time: end, bucket: "day", time_zone: "UTC", group_by: ["member", "model"] };
    const post = (path: string, headers: Record<string, string>) => fetch(`${svc.baseUrl}${path}`, {
      method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers }, body: JSON.stringify(report),
    });
    const unhurried = await post("/openapi/v1/statistics/usage-report", {});
    expect(unhurried.status).toBe(200);
    expect(((await unhurried.json()) as { data: { buckets: unknown[] } }).data.buckets).toHaveLength(101);

    const rest = await post("/openapi/v1/statistics/usage-report", { "connect-timeout-ms": "1" });
    expect(rest.status).toBe(504);
    expect(await rest.json()).toMatchObject({ code: 5040, data: null });
    const connect = await post("/enterprise_admin.v1.UsageService/GetUsageReport", { "connect-protocol-version": "1", "connect-timeout-ms": "1" });
    expect(connect.status).toBe(504);
    expect(((await connect.json()) as { code: string }).code).toBe("deadline_exceeded");
    const exported = await fetch(`${svc.baseUrl}/openapi/v1/statistics/usage-export?start_time=${report.start_time}&end_time=${end}&format=ndjson`, {
      headers: { authorization: `Bearer ${token}`, "connect-timeout-ms": "1" },
    });
    expect(exported.status).toBe(504);
    expect(await exported.json()).toMatchObject({ code: 5040, data: null });

    // The header alone: the client sets no timer of its own, so the answer it gets is the server's.
    const client = createClient(UsageService, createGrpcTransport({ baseUrl: svc.baseUrl }));
    const error = await client.getUsageReport({ startTime: BigInt(report.start_time), endTime: BigInt(end), bucket: "day", timeZone: report.time_zone, groupBy: report.group_by },
      { headers: { authorization: `Bearer ${token}`, "grpc-timeout": "1m" } }).then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(error?.code).toBe(Code.DeadlineExceeded);
    expect(error?.findDetails(ErrorDetailSchema).map((d) => d.code)).toEqual([5040]);
  });

  it("answers a batch whose ingestion held the event loop past its deadline with 504, and writes none of it", async () => {
    // 50,000 events held pending (usage-repository.ts, MAX_PENDING_EVENTS): the next batch sums them
    // all into the rollups, long after its body was read.
    const batch = (prefix: string, i0: number) => JSON.stringify({ events: Array.from({ length: 1_000 }, (_, i) => ({
      event_id: `${prefix}-${i0 + i}`, user_id: (i0 + i) % 2 ? "7001" : "7002", model_name: "m", model_type: "Chat", model_source: "Builtin",
      timestamp: 1_780_000_000 - (i0 + i) * 60, input_tokens: 1, output_tokens: 1, basic_amount: "0.000001", pay_go_amount: "0",
    })) });
    const record = (body: string, headers: Record<string, string> = {}) => fetch(`${svc.baseUrl}/openapi/v1/usage/events/batch-record`, {
      method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers }, body,
    });
    for (let i0 = 0; i0 < 50_000; i0 += 1_000) expect((await record(batch("pending", i0))).status).toBe(200);
    const res = await record(batch("late", 0), { "connect-timeout-ms": "20" });
    expect(res.status).toBe(504);
    expect(await res.json()).toMatchObject({ code: 5040, data: null });
    const stored = await svc.database.db.selectFrom("usage_event").select("event_id").where("event_id", "like", "late-%").execute();
    expect(stored).toEqual([]);
  }, 60_000);

  it("lets other work run between the days of a long report, not only when it ends", async () => {
    // 100,000 events over 40 days, read raw a day at a time: Asia/Kolkata is not the layout's zone, and
    // the user_ids filter keeps the report out of the day cache, so each report reads them all again.
    const end = 1_790_000_000;
    const file = join(dir, "forty-days.ndjson");
    writeFileSync(file, Array.from({ length: 100_000 }, (_, i) => JSON.stringify({
      event_id: `forty-days-${i}`, user_id: i % 2 ? "7001" : "7002", model_name: `m${i % 7}`, model_type: "Chat", model_source: "Builtin",
      timestamp: end - 1 - (i % 40) * 86_400 - (i % 86_000), input_tokens: 1, output_tokens: 1, basic_amount: "0.000001", pay_go_amount: "0",
    })).join("\n"));
    expect((await importUsage(new UsageRepository(svc.database), "acme", file)).recorded).toBe(100_000);
    const body = JSON.stringify({ start_time: end - 40 * 86_400, end_time: end, time_zone: "Asia/Kolkata", group_by: ["model"], user_ids: ["7001", "7002"] });
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    // Held in one stretch, every report holds the thread for nearly all its time. Three reports, so that
    // one pause of a loaded machine (a collection, another process) cannot pass for a report's stretch.
    const shares: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { took, longestGap } = await withThreadGaps(async () => {
        const res = await fetch(`${svc.baseUrl}/openapi/v1/statistics/usage-report`, { method: "POST", headers, body });
        expect(res.status).toBe(200);
        expect(((await res.json()) as { data: { buckets: unknown[] } }).data.buckets).toHaveLength(41);
      });
      shares.push(`${longestGap.toFixed(1)} of ${took.toFixed(1)} ms`);
      if (longestGap < took / 2) return;
    }
    expect.fail(`each report held the thread for over half its time at a stretch: ${shares.join(", ")}`);
  }, 60_000);
});

describe("the connection cap (MAX_CONNECTIONS)", () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService("sqlite", { MAX_CONNECTIONS: "3" });
  }, 60_000);
  afterAll(async () => svc?.close());

  it("closes connections past the cap at once and accepts again when one ends", async () => {
    const held = [rawHttp(svc.port), rawHttp(svc.port), rawHttp(svc.port)];
    await Promise.all(held.map((c) => c.connected));
    await new Promise((resolve) => setTimeout(resolve, 50)); // the server has accepted them
    const extra = rawHttp(svc.port);
    await socketClosed(extra.socket, 1_000);
    expect(extra.received()).toBe("");

    held[0]!.socket.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const next = rawHttp(svc.port);
    await next.connected;
    next.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    await socketClosed(next.socket, 2_000);
    expect(next.received()).toMatch(/^HTTP\/1\.1 200 /);
    for (const c of held) c.socket.destroy();
  });
});
