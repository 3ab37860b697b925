// End to end: the real CLI (`enterprise-admin serve`) drains in-flight calls on SIGTERM and exits 0.
// Requests are held open with `Expect: 100-continue`: the server's 100 Continue proves the handler has
// started (Node answers it right before emitting 'request'), and the body is only sent after SIGTERM, so
// each request is provably in flight while the server shuts down.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import { cli } from "../helpers/cli.js";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/databases.js";
import { rawHttp } from "../helpers/hostile-clients.js";
import { holdWriteLock } from "../helpers/write-lock.js";

const CLI = fileURLToPath(new URL("../../bin/enterprise-admin.mjs", import.meta.url));
const IDS = ["111", "0", "nope", "111"];
const BODY = JSON.stringify({ department_ids: IDS });
/** The demo enterprise's answer (src/demo/directory.ts), in the REST `data` shape. */
const EXPECTED_DATA = {
  items: [
    { department_id: "111", parent_department_id: "110", name: "Platform", full_path: "Demo Corp/Engineering/Platform", depth: 2 },
    { department_id: "100", parent_department_id: "0", name: "Demo Corp", full_path: "Demo Corp", depth: 0 },
  ],
  not_found_department_ids: ["nope"],
};
const REST_PATH = "/openapi/v1/departments/batch-get";
const CONNECT_PATH = "/enterprise_admin.v1.DepartmentService/BatchGetDepartments";

interface HttpResult {
  status: number;
  requestIdHeader: string | undefined;
  body: string;
  /** HTTP/1.1 only: the Connection header of the answer. */
  connection?: string;
}

/** A request whose handler has started (`ready`) but whose body is held back until `finish()`. */
interface HeldRequest {
  name: string;
  requestId: string;
  ready: Promise<void>;
  finish(): void;
  result: Promise<HttpResult>;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** `serve` of `db` on a free port with extra environment (log level info); resolves once it is listening. */
async function startServe(db: string, env: Record<string, string>) {
  const port = await freePort();
  const child = spawn(process.execPath, [CLI, "serve", "--port", String(port), "--db", db], {
    env: { ...process.env, LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  const exited = new Promise<{ code: number | null; at: number }>((resolve) => child.once("close", (code) => resolve({ code, at: Date.now() })));
  try {
    await withTimeout((async () => { while (!stdout.includes('"msg":"listening"')) await new Promise((r) => setTimeout(r, 20)); })(), 20_000, "listening");
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
  return { child, port, exited, stdout: () => stdout };
}

/** An HTTP/1.1 POST on its own connection. */
function holdHttp1(name: string, port: number, path: string, token: string, requestId: string): HeldRequest {
  const req = http.request({
    host: "127.0.0.1",
    port,
    method: "POST",
    path,
    agent: false,
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      "content-length": Buffer.byteLength(BODY),
      "x-request-id": requestId,
      expect: "100-continue",
    },
  });
  const ready = new Promise<void>((resolve, reject) => {
    req.once("continue", resolve);
    req.once("error", reject);
  });
  const result = new Promise<HttpResult>((resolve, reject) => {
    req.once("error", reject);
    req.once("response", (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, requestIdHeader: res.headers["x-request-id"] as string | undefined, body, connection: res.headers.connection }));
      res.on("error", reject);
    });
  });
  req.flushHeaders();
  return { name, requestId, ready, result, finish: () => req.end(BODY) };
}

/** A POST as one stream of an h2c session (several may share it). */
function holdHttp2(name: string, session: http2.ClientHttp2Session, path: string, headers: Record<string, string>, requestId: string): HeldRequest {
  const stream = session.request(
    { ":method": "POST", ":path": path, "x-request-id": requestId, expect: "100-continue", ...headers },
    { endStream: false },
  );
  const ready = new Promise<void>((resolve, reject) => {
    stream.once("continue", resolve);
    stream.once("error", reject);
  });
  const result = new Promise<HttpResult>((resolve, reject) => {
    let status = 0;
    let requestIdHeader: string | undefined;
    let body = "";
    stream.once("response", (h) => {
      status = Number(h[":status"]);
      requestIdHeader = h["x-request-id"] as string | undefined;
    });
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => (body += chunk));
    stream.once("end", () => resolve({ status, requestIdHeader, body }));
    stream.once("error", reject);
  });
  return { name, requestId, ready, result, finish: () => stream.end(BODY) };
}

/** What a loop of calls on one kept-alive connection saw until the server ended it. */
interface KeepAliveTraffic {
  name: string;
  statuses: number[];
  /** Calls the server accepted that then failed (never a call refused before it reached the server). */
  failures: string[];
  lastConnectionHeader?: string;
  goaway?: number;
}

const KEEP_ALIVE_BODY = JSON.stringify({ department_ids: ["111"] });

/** REST calls one after another on one HTTP/1.1 keep-alive connection, until it is closed. */
async function keepAliveHttp1(port: number, token: string, stop: AbortSignal, traffic: KeepAliveTraffic): Promise<KeepAliveTraffic> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let sockets = 0;
  agent.on("free", () => {});
  while (!stop.aborted) {
    const outcome = await new Promise<"next" | "end">((resolve) => {
      const req = http.request({ host: "127.0.0.1", port, method: "POST", path: REST_PATH, agent,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "content-length": Buffer.byteLength(KEEP_ALIVE_BODY) } });
      req.once("socket", (socket) => {
        if (!(socket as net.Socket & { counted?: true }).counted) {
          (socket as net.Socket & { counted?: true }).counted = true;
          sockets++;
        }
      });
      req.once("response", (res) => {
        res.resume();
        res.once("end", () => {
          traffic.statuses.push(res.statusCode ?? 0);
          traffic.lastConnectionHeader = res.headers.connection;
          resolve("next");
        });
      });
      req.once("error", (error: NodeJS.ErrnoException) => {
        // Not failures: a new connection refused (the server stopped accepting), or a call written
        // to a kept-alive connection as the server closed it idle (Node's documented case for a
        // retry: `reusedSocket` and ECONNRESET). Neither reached a handler.
        const closedIdle = req.reusedSocket && error.code === "ECONNRESET";
        if (error.code !== "ECONNREFUSED" && !closedIdle) traffic.failures.push(`${error.code ?? ""} ${error.message}`);
        resolve("end");
      });
      req.end(KEEP_ALIVE_BODY);
    });
    if (outcome === "end") break;
  }
  agent.destroy();
  if (sockets > 2) traffic.failures.push(`expected one kept-alive connection, then one refused; opened ${sockets}`);
  return traffic;
}

/** REST calls one after another on one HTTP/2 session, until the server sends GOAWAY. */
async function keepAliveHttp2(baseUrl: string, token: string, stop: AbortSignal, traffic: KeepAliveTraffic): Promise<KeepAliveTraffic> {
  const session = http2.connect(baseUrl);
  session.on("error", () => {});
  session.once("goaway", (code) => (traffic.goaway = code));
  while (!stop.aborted && traffic.goaway === undefined && !session.closed && !session.destroyed) {
    await new Promise<void>((resolve) => {
      let stream: http2.ClientHttp2Stream;
      try {
        stream = session.request({ ":method": "POST", ":path": REST_PATH, authorization: `Bearer ${token}`, "content-type": "application/json" });
      } catch {
        return resolve(); // the session is going away: this call was never sent
      }
      let status = 0;
      stream.once("response", (headers) => (status = Number(headers[":status"])));
      stream.resume();
      stream.once("end", () => {
        traffic.statuses.push(status);
        resolve();
      });
      stream.once("error", (error: NodeJS.ErrnoException) => {
        // Refused or never sent after GOAWAY: not processed by the server, safe to retry elsewhere.
        if (stream.rstCode !== http2.constants.NGHTTP2_REFUSED_STREAM && error.code !== "ERR_HTTP2_GOAWAY_SESSION") {
          traffic.failures.push(`${error.code ?? ""} ${error.message}`);
        }
        resolve();
      });
      stream.end(KEEP_ALIVE_BODY);
    });
  }
  session.destroy();
  return traffic;
}

describe("serve: graceful shutdown on SIGTERM", () => {
  let dir = "";
  let token = "";
  let child: ChildProcess | undefined;
  let stdout = "";
  let stderr = "";
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  let warmUp: HttpResult | undefined;
  let held: HeldRequest[] = [];
  let readiness: PromiseSettledResult<void>[] = [];
  let outcomes: PromiseSettledResult<HttpResult>[] = [];
  let connectAfterSigterm: string | undefined;
  let healthzAfterSigterm = "";
  let readyzAfterSigterm = "";
  let watched: ServingStatus[] = [];
  let watchEnded: Promise<unknown> = Promise.resolve();
  let traffic: Promise<KeepAliveTraffic[]> = Promise.resolve([]);
  let signalledAt = 0;
  let exitedAt = 0;

  const logLines = () => stdout.split("\n").filter((line) => line.trim() !== "");
  const waitForLog = (predicate: (line: Record<string, unknown>) => boolean, what: string) =>
    withTimeout(
      new Promise<void>((resolve) => {
        const check = () => {
          for (const line of logLines()) {
            try {
              if (predicate(JSON.parse(line) as Record<string, unknown>)) return resolve();
            } catch {
              // not JSON: the log-format test reports it
            }
          }
          setTimeout(check, 20);
        };
        check();
      }),
      20_000,
      `${what}\nstdout:\n${stdout}\nstderr:\n${stderr}`,
    );

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "eadmin-shutdown-"));
    const db = join(dir, "demo.sqlite");
    // Seeded in this process (the same command, without a process start of its own): only `serve` needs one here.
    const seeded = await cli(["seed", "--demo", "--db", db]);
    token = seeded.stdout.trim();
    expect(token, "seed --demo prints the access token alone on stdout").toMatch(/^\S+$/);

    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    // Rate limits off: the keep-alive loops call back to back for as long as the signal takes to
    // come, and past the default burst (200 calls) they were answered 429 instead of 200.
    child = spawn(process.execPath, [CLI, "serve", "--port", String(port), "--db", db], {
      env: { ...process.env, LOG_LEVEL: "info", RATE_LIMIT_RPS: "0" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const closed = new Promise<void>((resolve) =>
      child!.once("close", (code, signal) => {
        exitedAt = Date.now();
        exit = { code, signal };
        resolve();
      }),
    );
    await waitForLog((line) => line.msg === "listening" && line.port === port, "the 'listening' log line");

    // One complete call first: the server works before the shutdown starts.
    const res = await fetch(`${baseUrl}${REST_PATH}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "x-request-id": "shutdown-warm-up" },
      body: BODY,
    });
    warmUp = { status: res.status, requestIdHeader: res.headers.get("x-request-id") ?? undefined, body: await res.text() };

    // Several calls in flight: REST over HTTP/1.1 (two connections), REST and Connect over h2c (one session).
    const session = http2.connect(baseUrl);
    session.on("error", () => {}); // each stream reports its own failure
    const json = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    held = [
      holdHttp1("REST over HTTP/1.1 #1", port, REST_PATH, token, "shutdown-h1-1"),
      holdHttp1("REST over HTTP/1.1 #2", port, REST_PATH, token, "shutdown-h1-2"),
      holdHttp2("REST over h2c", session, REST_PATH, json, "shutdown-h2-rest"),
      holdHttp2("Connect JSON over h2c", session, CONNECT_PATH, { ...json, "connect-protocol-version": "1" }, "shutdown-h2-connect"),
    ];
    readiness = await Promise.allSettled(held.map((h) => withTimeout(h.ready, 5_000, `${h.name}: 100 Continue`)));

    // A gRPC health Watch, and a /healthz request on a kept-alive connection whose headers are
    // completed only after the signal.
    const health = createClient(Health, createGrpcTransport({ baseUrl }));
    const watching = new AbortController();
    watchEnded = (async () => {
      for await (const { status } of health.watch({ service: "" }, { signal: watching.signal })) watched.push(status);
    })().catch((error: unknown) => error);
    const healthz = rawHttp(port);
    await healthz.connected;
    healthz.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n");
    const readyz = rawHttp(port);
    await readyz.connected;
    readyz.socket.write("GET /readyz HTTP/1.1\r\nHost: x\r\n");
    // Keep-alive traffic on both protocols, running through the signal.
    const stopTraffic = new AbortController();
    const flows: KeepAliveTraffic[] = [{ name: "HTTP/1.1 keep-alive", statuses: [], failures: [] }, { name: "HTTP/2 session", statuses: [], failures: [] }];
    traffic = Promise.all([keepAliveHttp1(port, token, stopTraffic.signal, flows[0]!), keepAliveHttp2(baseUrl, token, stopTraffic.signal, flows[1]!)]);
    await withTimeout((async () => { while (watched.length === 0) await new Promise((r) => setTimeout(r, 10)); })(), 5_000, "the first Watch status");
    // The traffic is flowing: some calls answered on each protocol (a count, not a time: a loaded machine answers fewer in 300 ms).
    await withTimeout((async () => { while (flows.some((flow) => flow.statuses.length < 6)) await new Promise((r) => setTimeout(r, 10)); })(), 10_000, "the keep-alive traffic");

    signalledAt = Date.now();
    child.kill("SIGTERM");
    await waitForLog((line) => typeof line.msg === "string" && line.msg.startsWith("shutting down"), "the 'shutting down' log line");
    // Both listened for at once: the second socket may close while the first is awaited.
    const probesClosed = [healthz, readyz].map((probe) => new Promise<string>((resolve) => probe.socket.once("close", () => resolve(probe.received()))));
    healthz.socket.write("\r\n");
    readyz.socket.write("\r\n");
    healthzAfterSigterm = await withTimeout(probesClosed[0]!, 5_000, "/healthz after SIGTERM");
    readyzAfterSigterm = await withTimeout(probesClosed[1]!, 5_000, "/readyz after SIGTERM");

    // The listener is closed now: a new connection is refused while the old calls drain.
    connectAfterSigterm = await new Promise<string>((resolve) => {
      const socket = net.connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve("connected");
      });
      socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    });

    await withTimeout(watchEnded, 5_000, "the Watch stream to end");
    for (const h of held) h.finish();
    outcomes = await Promise.allSettled(held.map((h) => withTimeout(h.result, 15_000, `${h.name}: response`)));
    session.destroy();
    await withTimeout(closed, 20_000, "the serve process to exit");
    stopTraffic.abort();
    watching.abort();
  }, 90_000);

  afterAll(() => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("serves a complete call before the signal", () => {
    expect(warmUp?.status).toBe(200);
    expect(JSON.parse(warmUp!.body)).toEqual({ code: 0, message: "success", request_id: "shutdown-warm-up", data: EXPECTED_DATA });
  });

  it("had every held request's handler running before SIGTERM (100 Continue received)", () => {
    expect(readiness.map((r, i) => [held[i]!.name, r.status === "fulfilled" ? "running" : String(r.reason)])).toEqual(
      held.map((h) => [h.name, "running"]),
    );
  });

  it("refuses new connections once draining has begun", () => {
    expect(connectAfterSigterm).toBe("ECONNREFUSED");
  });

  it("completes every in-flight REST call with 200 and the full answer", () => {
    const rest = held.map((h, i) => [h, outcomes[i]] as const).filter(([h]) => h.name.startsWith("REST"));
    expect(rest).toHaveLength(3);
    for (const [h, outcome] of rest) {
      expect(outcome?.status, `${h.name}: ${outcome?.status === "rejected" ? String(outcome.reason) : ""}`).toBe("fulfilled");
      const res = (outcome as PromiseFulfilledResult<HttpResult>).value;
      expect(res.status, h.name).toBe(200);
      expect(res.requestIdHeader, h.name).toBe(h.requestId);
      expect(JSON.parse(res.body), h.name).toEqual({ code: 0, message: "success", request_id: h.requestId, data: EXPECTED_DATA });
    }
  });

  it("completes the in-flight Connect call over h2c with 200 and the full answer", () => {
    const i = held.findIndex((h) => h.name === "Connect JSON over h2c");
    const outcome = outcomes[i]!;
    expect(outcome.status, outcome.status === "rejected" ? String(outcome.reason) : "").toBe("fulfilled");
    const res = (outcome as PromiseFulfilledResult<HttpResult>).value;
    expect(res.status).toBe(200);
    expect(res.requestIdHeader).toBe("shutdown-h2-connect");
    // Connect JSON with proto field names; the root's depth 0 is a default and so omitted.
    expect(JSON.parse(res.body)).toEqual({
      items: [EXPECTED_DATA.items[0], { department_id: "100", parent_department_id: "0", name: "Demo Corp", full_path: "Demo Corp" }],
      not_found_department_ids: ["nope"],
    });
  });

  it("exits with code 0 after draining", () => {
    expect(exit).toEqual({ code: 0, signal: null });
  });

  it("writes JSON log lines only; every access line has a request_id, the held calls logged with 200", () => {
    const lines = logLines().map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        return { not_json: line };
      }
    });
    expect(lines.filter((line) => "not_json" in line)).toEqual([]);
    const messages = lines.map((line) => line.msg);
    // In order, "stopped" last: the exit wrote lines still on their way after later ones (2 of 10 idle shutdowns on PostgreSQL).
    expect(messages.filter((msg) => msg !== "request" && msg !== "request failed")).toStrictEqual(["listening", "shutting down: draining in-flight calls", "stopped"]);
    expect(messages.at(-1)).toBe("stopped");

    const access = lines.filter((line) => line.msg === "request");
    expect(access.length).toBeGreaterThanOrEqual(1 + held.length);
    for (const line of access) expect(line.request_id).toMatch(/^[\x21-\x7e]{1,128}$/);
    const byId = new Map(access.map((line) => [line.request_id, line]));
    for (const id of ["shutdown-warm-up", ...held.map((h) => h.requestId)]) {
      expect(byId.get(id), `access line of ${id}`).toMatchObject({ request_id: id, method: "POST", status: 200 });
    }
  });

  it("turns /healthz and /readyz to 503 with Connection: close and gRPC health to NOT_SERVING while calls are still held", () => {
    expect(healthzAfterSigterm).toMatch(/^HTTP\/1\.1 503 /);
    expect(healthzAfterSigterm).toMatch(/\r\nconnection: close\r\n/i);
    expect(readyzAfterSigterm).toMatch(/^HTTP\/1\.1 503 [^]*\{"status":"draining"\}$/);
    expect(watched).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING]);
  });

  it("answers the held HTTP/1.1 calls with Connection: close", () => {
    const h1 = held.map((h, i) => [h, outcomes[i]] as const).filter(([h]) => h.name.includes("HTTP/1.1"));
    for (const [h, outcome] of h1) expect((outcome as PromiseFulfilledResult<HttpResult>).value.connection, h.name).toBe("close");
  });

  it("ends keep-alive traffic cleanly: every call sent is answered 200, later HTTP/1.1 answers say Connection: close, HTTP/2 gets GOAWAY", async () => {
    const [h1, h2] = await traffic;
    for (const t of [h1!, h2!]) {
      expect(t.failures, t.name).toEqual([]);
      expect(t.statuses.filter((status) => status !== 200), t.name).toEqual([]);
    }
    expect(h1!.statuses.length).toBeGreaterThan(5);
    // The server's side: no call of the traffic was cut off (499) or failed.
    const accessLines = logLines().map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === "request");
    expect(accessLines.filter((line) => line.status !== 200 && line.path === REST_PATH)).toEqual([]);
    expect(h2!.statuses.length).toBeGreaterThan(5);
    expect(h2!.goaway).toBe(http2.constants.NGHTTP2_NO_ERROR);
  });

  it("exits within the shutdown grace once the held calls are answered", () => {
    expect(exitedAt - signalledAt).toBeLessThan(10_000);
  });

  it("never writes the access token to stdout or stderr", () => {
    expect(token.length).toBeGreaterThan(10);
    expect(logLines().filter((line) => line.includes(token))).toEqual([]);
    expect(stderr.includes(token)).toBe(false);
  });
});

describe("serve: the shutdown grace and a second signal", () => {
  let dir = "";
  let token = "";
  const children: ChildProcess[] = [];

  /** `serve` of the demo store; resolves once it is listening. */
  async function serve(env: Record<string, string>) {
    const server = await startServe(join(dir, "demo.sqlite"), env);
    children.push(server.child);
    return server;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "eadmin-grace-"));
    const seeded = await cli(["seed", "--demo", "--db", join(dir, "demo.sqlite")]);
    expect(seeded.code, seeded.stderr).toBe(0);
    token = seeded.stdout.trim();
  }, 60_000);

  afterAll(() => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("exits 0 once SHUTDOWN_GRACE_MS has passed, closing the connection of a call that never finishes", async () => {
    const server = await serve({ SHUTDOWN_GRACE_MS: "1000" });
    const stuck = holdHttp1("stuck", server.port, REST_PATH, token, "grace-stuck");
    await withTimeout(stuck.ready, 5_000, "100 Continue");
    const signalled = Date.now();
    server.child.kill("SIGTERM");
    const outcome = await withTimeout(stuck.result.then(() => "answered", (error: NodeJS.ErrnoException) => error.code ?? error.message), 5_000, "the stuck call to end");
    const exit = await withTimeout(server.exited, 5_000, "the serve process to exit");
    expect(outcome).toBe("ECONNRESET");
    expect(exit.code).toBe(0);
    expect(exit.at - signalled).toBeGreaterThanOrEqual(900);
    expect(exit.at - signalled).toBeLessThan(4_000);
    // The server cut it, not its caller: logged before "stopped" as 503 with code 5030 (it was logged as 499, or not at all).
    const lines = server.stdout().split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
    const cut = lines.findIndex((line) => line.request_id === "grace-stuck");
    expect(lines[cut]).toMatchObject({ level: 40, status: 503, code: 5030, method: "POST", path: REST_PATH, msg: "request cut at the end of the shutdown grace" });
    expect(cut).toBeLessThan(lines.findIndex((line) => line.msg === "stopped"));
  }, 30_000);

  it("logs each call the grace cuts before it stops: a report working on the locked store and one waiting its turn (neither was logged)", async () => {
    const server = await serve({ SHUTDOWN_GRACE_MS: "500", STORE_BUSY_TIMEOUT_MS: "30000", REPORT_MAX_RUNNING: "1" });
    const base = `http://127.0.0.1:${server.port}`;
    const post = (path: string, body: unknown, requestId: string) => fetch(base + path, {
      method: "POST", body: JSON.stringify(body), headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "x-request-id": requestId },
    }).then((reply) => reply.status, (error: Error & { cause?: NodeJS.ErrnoException }) => error.cause?.code ?? error.name);
    const reportLoad = async () => {
      const text = await (await fetch(`${base}/metrics`)).text();
      return ["running", "waiting"].map((state) => new RegExp(`^enterprise_admin_usage_reports_${state} (\\d+)$`, "m").exec(text)?.[1]).join("/");
    };
    const now = Math.floor(Date.now() / 1000);
    // An API batch leaves its sums pending; a report adds them to the rollups first, a write, which waits for the lock held here.
    expect(await post("/openapi/v1/usage/events/batch-record", { events: [{ event_id: "cut-0", user_id: "7001", model_name: "m", model_type: "Chat",
      model_source: "Builtin", timestamp: now - 60, input_tokens: 1, output_tokens: 1, basic_amount: "0.1", pay_go_amount: "0" }] }, "cut-record")).toBe(200);
    const release = await holdWriteLock("sqlite", join(dir, "demo.sqlite"));
    try {
      const report = { start_time: now - 7 * 86_400, end_time: now + 3600, bucket: "day", group_by: ["model"] };
      const calls = ["cut-working", "cut-waiting"].map((id) => post("/openapi/v1/statistics/usage-report", report, id));
      for (let tries = 0; tries < 200 && (await reportLoad()) !== "1/1"; tries++) await new Promise((r) => setTimeout(r, 25));
      expect(await reportLoad()).toBe("1/1");
      server.child.kill("SIGTERM");
      expect((await withTimeout(server.exited, 10_000, "the serve process to exit")).code).toBe(0);
      expect(await Promise.all(calls)).toStrictEqual(["UND_ERR_SOCKET", "UND_ERR_SOCKET"]);
    } finally {
      await release();
    }
    const lines = server.stdout().split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
    const stopped = lines.findIndex((line) => line.msg === "stopped");
    for (const id of ["cut-working", "cut-waiting"]) {
      const at = lines.findIndex((line) => line.request_id === id);
      expect(lines[at], id).toMatchObject({ level: 40, status: 503, code: 5030, procedure: "/enterprise_admin.v1.UsageService/GetUsageReport" });
      expect(at).toBeLessThan(stopped);
    }
    expect(lines.filter((line) => (line.level as number) >= 50)).toStrictEqual([]);
  }, 60_000);

  it("exits at once on a second signal, without waiting for the grace", async () => {
    const server = await serve({ SHUTDOWN_GRACE_MS: "20000" });
    const stuck = holdHttp1("stuck", server.port, REST_PATH, token, "second-signal-stuck");
    stuck.result.catch(() => {});
    await withTimeout(stuck.ready, 5_000, "100 Continue");
    server.child.kill("SIGTERM");
    await withTimeout((async () => { while (!server.stdout().includes("shutting down")) await new Promise((r) => setTimeout(r, 20)); })(), 5_000, "shutting down");
    const second = Date.now();
    server.child.kill("SIGTERM");
    const exit = await withTimeout(server.exited, 5_000, "the serve process to exit");
    expect(exit.at - second).toBeLessThan(1_000);
    expect(exit.code).toBe(1);
    expect(server.stdout()).toContain("second signal: exiting without draining");
  }, 30_000);

  it("an empty HOST or LOG_LEVEL is the default: 127.0.0.1 alone (not every interface) and info", async () => {
    const server = await serve({ HOST: "", LOG_LEVEL: "" });
    const listening = server.stdout().split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.msg === "listening");
    expect(listening).toMatchObject({ level: 30, host: "127.0.0.1" });
    const connect = (host: string) => new Promise<string>((resolve) => {
      const socket = net.connect({ host, port: server.port }, () => (socket.destroy(), resolve("connected")));
      socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? "error"));
    });
    expect([await connect("127.0.0.1"), await connect("127.0.0.2")]).toStrictEqual(["connected", "ECONNREFUSED"]);
    server.child.kill("SIGTERM");
    expect((await withTimeout(server.exited, 10_000, "the serve process to exit")).code).toBe(0);
  }, 30_000);
});

describe.runIf(dialects.includes("postgres"))("serve on PostgreSQL: SIGTERM while statements wait on the store", () => {
  let testDb: TestDatabase;
  let token = "";

  beforeAll(async () => {
    testDb = await createTestDatabase("postgres");
    const seeded = await cli(["seed", "--demo", "--db", testDb.url]);
    expect(seeded.code, seeded.stderr).toBe(0);
    token = seeded.stdout.trim();
  }, 60_000);

  afterAll(async () => {
    await testDb?.drop();
  });

  it("answers the waiting calls 503 at the busy timeout and exits, not when the lock is released", async () => {
    const { child, port, exited } = await startServe(testDb.url, { SHUTDOWN_GRACE_MS: "5000", STORE_BUSY_TIMEOUT_MS: "1500" });
    const locker = new pg.Client({ connectionString: testDb.url });
    try {
      await locker.connect();
      await locker.query("begin");
      await locker.query("lock table usage_event, usage_running_total in access exclusive mode");
      const now = Math.floor(Date.now() / 1000);
      const calls = Array.from({ length: 3 }, () => fetch(`http://127.0.0.1:${port}/openapi/v1/statistics/user-model-usage`, {
        method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ start_time: now - 86_400 - 3_600, end_time: now, user_ids: ["7001"] }),
      }).then((reply) => reply.status, (error: Error) => error.name));
      await new Promise((r) => setTimeout(r, 300)); // the statements are waiting on the lock
      const signalled = Date.now();
      child.kill("SIGTERM");
      const exit = await withTimeout(exited, 15_000, "the serve process to exit while the lock is held");
      expect(exit.code).toBe(0);
      expect(exit.at - signalled).toBeLessThan(4_000);
      expect(await Promise.all(calls)).toStrictEqual([503, 503, 503]);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await locker.query("rollback").catch(() => {});
      await locker.end().catch(() => {});
    }
  }, 60_000);

  it("on a PostgreSQL that stops answering (its connections open and silent): a call gets 504 at its deadline, /readyz 503 within the busy timeout, and SIGTERM still stops the server", async () => {
    const proxy = await freezingProxy(new URL(testDb.url));
    const { child, port, exited, stdout } = await startServe(proxy.url, { SHUTDOWN_GRACE_MS: "500", STORE_BUSY_TIMEOUT_MS: "1000" });
    try {
      const whoami = (headers: Record<string, string> = {}) => fetch(`http://127.0.0.1:${port}/openapi/v1/auth/whoami`, {
        headers: { authorization: `Bearer ${token}`, ...headers }, signal: AbortSignal.timeout(15_000),
      });
      // Three at once: the pool then holds open connections for the calls and the readiness check below.
      expect((await Promise.all([whoami(), whoami(), whoami()])).map((reply) => reply.status)).toStrictEqual([200, 200, 200]);
      proxy.freeze();
      const late = await whoami({ "connect-timeout-ms": "1000" });
      expect({ status: late.status, code: ((await late.json()) as { code: number }).code }).toStrictEqual({ status: 504, code: 5040 });
      // Connect binary (connect-es's own handler, which authorizes before the chain): the same deadline.
      const connect = await fetch(`http://127.0.0.1:${port}/enterprise_admin.v1.AuthService/WhoAmI`, {
        method: "POST", body: new Uint8Array(), signal: AbortSignal.timeout(15_000),
        headers: { authorization: `Bearer ${token}`, "content-type": "application/proto", "connect-timeout-ms": "1000" },
      });
      expect({ status: connect.status, code: ((await connect.json()) as { code: string }).code }).toStrictEqual({ status: 504, code: "deadline_exceeded" });
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(15_000) });
      expect({ status: ready.status, body: await ready.text() }).toStrictEqual({ status: 503, body: '{"status":"store unreachable"}' });
      child.kill("SIGTERM");
      expect((await withTimeout(exited, 15_000, "the serve process to exit while the store is silent")).code).toBe(0);
      const lines = stdout().split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines.filter((line) => line.level === 40).map((line) => line.msg))
        .toContain("the store did not close (a statement or checkpoint still waits for it): stopping without it");
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      proxy.close();
    }
  }, 60_000);
});

/** A TCP proxy to PostgreSQL whose `freeze` leaves every connection open and silent both ways: a server that stopped answering. */
async function freezingProxy(target: URL) {
  let frozen = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => {});
    }
    client.on("data", (chunk) => void (frozen || upstream.write(chunk)));
    upstream.on("data", (chunk) => void (frozen || client.write(chunk)));
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = new URL(target);
  url.hostname = "127.0.0.1";
  url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    freeze: () => void (frozen = true),
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}
