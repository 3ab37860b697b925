// End to end: the real CLI (`enterprise-admin serve`) drains in-flight calls on SIGTERM and exits 0.
// Requests are held open with `Expect: 100-continue`: the server's 100 Continue proves the handler has
// started (Node answers it right before emitting 'request'), and the body is only sent after SIGTERM, so
// each request is provably in flight while the server shuts down.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const CLI = fileURLToPath(new URL("../../bin/enterprise-admin.mjs", import.meta.url));
const run = promisify(execFile);
const IDS = ["111", "0", "nope", "111"];
const BODY = JSON.stringify({ department_ids: IDS });
/** The demo enterprise's answer (src/cli/demo-directory.ts), in the REST `data` shape. */
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
      res.on("end", () => resolve({ status: res.statusCode ?? 0, requestIdHeader: res.headers["x-request-id"] as string | undefined, body }));
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
    const seeded = await run(process.execPath, [CLI, "seed", "--demo", "--db", db], { timeout: 60_000 });
    token = seeded.stdout.trim();
    expect(token, "seed --demo prints the access token alone on stdout").toMatch(/^\S+$/);

    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    child = spawn(process.execPath, [CLI, "serve", "--port", String(port), "--db", db], {
      env: { ...process.env, LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const closed = new Promise<void>((resolve) =>
      child!.once("close", (code, signal) => {
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

    child.kill("SIGTERM");
    await waitForLog((line) => typeof line.msg === "string" && line.msg.startsWith("shutting down"), "the 'shutting down' log line");

    // The listener is closed now: a new connection is refused while the old calls drain.
    connectAfterSigterm = await new Promise<string>((resolve) => {
      const socket = net.connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve("connected");
      });
      socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    });

    for (const h of held) h.finish();
    outcomes = await Promise.allSettled(held.map((h) => withTimeout(h.result, 15_000, `${h.name}: response`)));
    session.destroy();
    await withTimeout(closed, 20_000, "the serve process to exit");
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
    expect(messages).toContain("listening");
    expect(messages).toContain("shutting down: draining in-flight calls");
    expect(messages).toContain("stopped");

    const access = lines.filter((line) => line.msg === "request");
    expect(access.length).toBeGreaterThanOrEqual(1 + held.length);
    for (const line of access) expect(line.request_id).toMatch(/^[\x21-\x7e]{1,128}$/);
    const byId = new Map(access.map((line) => [line.request_id, line]));
    for (const id of ["shutdown-warm-up", ...held.map((h) => h.requestId)]) {
      expect(byId.get(id), `access line of ${id}`).toMatchObject({ request_id: id, method: "POST", status: 200 });
    }
  });

  it("never writes the access token to stdout or stderr", () => {
    expect(token.length).toBeGreaterThan(10);
    expect(logLines().filter((line) => line.includes(token))).toEqual([]);
    expect(stderr.includes(token)).toBe(false);
  });
});
