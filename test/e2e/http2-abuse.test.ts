// End to end over a real port: an HTTP/2 rapid-reset flood (streams opened and cancelled at once)
// gets GOAWAY (ENHANCE_YOUR_CALM), its address's new connections are refused for a cool-down, its
// cancelled calls are logged as 499 / 4990 at a bounded rate, and a well-behaved client on its own
// connection keeps being served meanwhile. The attacker connects from 127.0.0.2, the others from
// 127.0.0.1.
import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CANCELED_LINES_PER_SECOND } from "../../src/interceptors/access-log.js";
import { dialects } from "../helpers/databases.js";
import { accessLines, connectFrom, rapidResetFlood, type FloodResult } from "../helpers/hostile-clients.js";
import { startTestService, type TestService } from "../helpers/service.js";

const FLOOD_MS = 1_500;
const MAX_RESETS = 100;
const BATCH_GET = "/openapi/v1/departments/batch-get";
const ATTACKER = "127.0.0.2";

describe.each(dialects)("HTTP/2 rapid-reset flood (%s)", (dialect) => {
  let svc: TestService;
  let flood: FloodResult;
  let healthy: { ok: number; failed: number; slowestMs: number };
  let logsBefore = 0;

  beforeAll(async () => {
    svc = await startTestService(dialect, { HTTP2_MAX_RESETS_PER_10S: String(MAX_RESETS) });
    const token = await svc.token();
    const headers = { ":method": "GET", ":path": "/api/v1/environment_configs/supported_versions", authorization: `Bearer ${token}` };
    logsBefore = svc.logs.length;

    // The well-behaved client: one batch-get after another on its own session while the flood runs.
    const session = http2.connect(svc.baseUrl);
    session.on("error", () => {});
    healthy = { ok: 0, failed: 0, slowestMs: 0 };
    const until = Date.now() + FLOOD_MS;
    const wellBehaved = (async () => {
      while (Date.now() < until) {
        const started = performance.now();
        const status = await new Promise<number>((resolve) => {
          const stream = session.request({ ":method": "POST", ":path": BATCH_GET, authorization: `Bearer ${token}`, "content-type": "application/json" });
          let code = 0;
          stream.once("response", (h) => (code = Number(h[":status"])));
          stream.on("error", () => resolve(0));
          stream.resume();
          stream.once("end", () => resolve(code));
          stream.end(JSON.stringify({ department_ids: ["111"] }));
        });
        healthy.slowestMs = Math.max(healthy.slowestMs, performance.now() - started);
        if (status === 200) healthy.ok++;
        else healthy.failed++;
      }
    })();
    [flood] = await Promise.all([rapidResetFlood(svc.baseUrl, headers, FLOOD_MS, { localAddress: ATTACKER }), wellBehaved]);
    session.close();
    await new Promise((resolve) => setTimeout(resolve, 300)); // the last cancelled calls end and log
  }, 60_000);
  afterAll(async () => svc?.close());

  it("ends each flooding session with GOAWAY ENHANCE_YOUR_CALM once it passes the reset limit", () => {
    expect(flood.streams).toBeGreaterThan(MAX_RESETS * 2);
    expect(flood.goaways.length).toBeGreaterThanOrEqual(1);
    expect(new Set(flood.goaways)).toEqual(new Set([http2.constants.NGHTTP2_ENHANCE_YOUR_CALM]));
    // No session carried many more resets than the limit before it was ended.
    expect(flood.streams / flood.sessions).toBeLessThan(MAX_RESETS * 3);
  });

  it("refuses new connections from the flooding address during its cool-down, and serves other addresses", async () => {
    // Within the default 30 s cool-down every later connection of the attacker's was closed unserved:
    // the flood's first session is the only one that got a GOAWAY.
    expect(flood.goaways.length).toBe(1);
    expect(flood.sessions).toBeGreaterThan(1);
    const attempt = (localAddress: string) => new Promise<number>((resolve) => {
      const session = connectFrom(svc.baseUrl, localAddress);
      session.on("error", () => resolve(0));
      const stream = session.request({ ":path": "/healthz" });
      let status = 0;
      stream.once("response", (h) => (status = Number(h[":status"])));
      stream.on("error", () => {});
      stream.resume();
      stream.once("close", () => {
        session.destroy();
        resolve(status);
      });
    });
    expect(await attempt(ATTACKER)).toBe(0);
    expect(await attempt("127.0.0.1")).toBe(200);
  });

  it("logs cancelled calls as status 499 with code 4990, not 200", () => {
    const lines = accessLines(svc.logs.slice(logsBefore)).filter((l) => l.path === "/api/v1/environment_configs/supported_versions");
    const cancelled = lines.filter((l) => l.status === 499);
    expect(cancelled.length).toBeGreaterThan(0);
    expect(cancelled.filter((l) => l.code !== 4990)).toEqual([]);
    // A stream whose whole answer went out before its reset arrived was served: a few such, at most
    // one per session (the session ends around it).
    expect(lines.length - cancelled.length).toBeLessThanOrEqual(flood.sessions);
  });

  it("bounds the lines a flood writes: at most the per-second budget of cancelled calls, the rest counted", () => {
    const lines = svc.logs.slice(logsBefore).map((line) => JSON.parse(line) as Record<string, unknown>);
    const cancelled = lines.filter((l) => l.msg === "request" && l.status === 499);
    const seconds = Math.ceil(FLOOD_MS / 1000) + 1;
    expect(cancelled.length).toBeLessThanOrEqual(CANCELED_LINES_PER_SECOND * seconds);
    expect(lines.length).toBeLessThan(flood.streams / 4);
    expect(lines.filter((l) => l.level === 50)).toEqual([]);
  });

  it("keeps serving a well-behaved client on another connection", () => {
    // Bounds loose enough for a shared CI machine: the latency figures are the hostile benchmark's.
    expect(healthy.failed).toBe(0);
    expect(healthy.ok).toBeGreaterThanOrEqual(3);
    expect(healthy.slowestMs).toBeLessThan(2_000);
  });
});

describe.each(dialects)("an HTTP/2 :method or :path of tens of KB (%s)", (dialect) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService(dialect);
  });
  afterAll(async () => svc?.close());

  /** One request on its own session: the status and the answer's text. */
  const send = (headers: http2.OutgoingHttpHeaders) => new Promise<{ status: number; body: string }>((resolve, reject) => {
    const session = http2.connect(svc.baseUrl);
    session.on("error", reject);
    const stream = session.request(headers);
    let body = "";
    let status = 0;
    stream.once("response", (h) => (status = Number(h[":status"])));
    stream.on("data", (chunk: Buffer) => (body += chunk));
    stream.once("end", () => {
      session.close();
      resolve({ status, body });
    });
    stream.end();
  });

  it("is answered and logged cut to 512 characters with its length, not repeated whole (without a token)", async () => {
    const logsBefore = svc.logs.length;
    const method = await send({ ":method": "M".repeat(30_000), ":path": "/healthz" });
    expect(method.status).toBe(405);
    expect(JSON.parse(method.body).message).toBe(`method ${"M".repeat(512)}… (30000 characters) not allowed on /healthz; allowed: GET, HEAD`);
    const path = await send({ ":method": "GET", ":path": `/${"p".repeat(60_000)}` });
    expect(path.status).toBe(404);
    expect(JSON.parse(path.body).message).toBe(`no route for GET /${"p".repeat(511)}… (60001 characters)`);
    await new Promise((resolve) => setTimeout(resolve, 100)); // the access log line is written as the response closes
    const lines = svc.logs.slice(logsBefore);
    expect(lines.map((line) => line.length <= 2_000)).toStrictEqual(lines.map(() => true));
    expect(accessLines(lines).map((line) => [line.status, String(line.method).length, String(line.path).length]))
      .toStrictEqual([[405, 512 + "… (30000 characters)".length, 8], [404, 3, 512 + "… (60001 characters)".length]]);
  });
});
