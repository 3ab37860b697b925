// Benchmark: the service under hostile clients and routine operations. Prints figures; it is not a test.
// `npm run bench:hostile` (options: --flood-seconds 60, --flood-sessions 4, --slow-clients 50,
// --idle-clients 50, --only 1,2,3,4 to run some phases; the server's own defaults apply to its timeouts: headers 30 s, HTTP/1.1 keep-alive
// 5 s, idle HTTP/2 session 60 s, shutdown grace 10 s; see docs/operations.md).
//
// Each phase runs the real CLI (`bin/enterprise-admin.mjs serve`) in a child process on 127.0.0.1, on a
// temp SQLite store seeded by `seed --demo`, its log written to a file:
//   1. slowloris and idle: `--slow-clients` sockets send request headers a line every 2 s and never end
//      them; `--idle-clients` HTTP/1.1 connections (after one request) and as many HTTP/2 sessions (no
//      stream) stay open. Printed: how many the server still holds 5 s after each timeout, and when it
//      closed the last.
//   2. rapid reset: bench/hostile-flood.ts (its own process) opens and cancels HTTP/2 streams for
//      `--flood-seconds` on `--flood-sessions` connections at a time from 127.0.0.2, with no token (an
//      attacker needs none); a healthy client with a token sends one Connect call every 20 ms on its own HTTP/2
//      connection.
//      Printed: the healthy client's p50/p99 before and during the flood, the server's RSS (from
//      /proc/PID/status) before, at its peak and after, and the log lines and bytes the flood caused.
//   3. drain: 10 HTTP/1.1 keep-alive clients and 10 HTTP/2 streams call back to back; SIGTERM after 2 s.
//      Printed: time from the signal to the exit, the exit status, the calls answered 200, the calls
//      refused before reaching the server (a retry-safe refusal), and the calls that failed.
//   4. rotation during writes: a client creates configurations with secrets back to back while
//      `keys rotate` runs twice; then `keys verify`. Printed: configurations created, each rotation's
//      exit status, and verify's outcome.
// Rate limits are off (`RATE_LIMIT_RPS=0`) in phases 3 and 4, which load the service on purpose, and on
// in phases 1 and 2 (the healthy client stays under the default limit).
import { execFile, fork, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, openSync, closeSync } from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs, promisify } from "node:util";
import { freePort } from "./free-port.js";
import { DEFAULT_LIMITS } from "../src/config.js";
import type { FloodConfig, FloodTotals } from "./hostile-flood.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const CLI = join(ROOT, "bin/enterprise-admin.mjs");
const CONNECT_PATH = "/enterprise_admin.v1.DepartmentService/BatchGetDepartments";
const REST_PATH = "/openapi/v1/departments/batch-get";
const BODY = JSON.stringify({ department_ids: ["0", "110", "111"] });
const run = promisify(execFile);

const { values: options } = parseArgs({
  options: {
    "flood-seconds": { type: "string", default: "60" },
    "flood-sessions": { type: "string", default: "4" },
    "slow-clients": { type: "string", default: "50" },
    "idle-clients": { type: "string", default: "50" },
    only: { type: "string", default: "1,2,3,4" },
  },
});
const num = (name: keyof typeof options) => Number(options[name]);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

interface Server {
  baseUrl: string;
  port: number;
  child: ChildProcess;
  logFile: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

class Workspace {
  readonly dir = mkdtempSync(join(tmpdir(), "eadmin-hostile-"));
  readonly dbFile = join(this.dir, "hostile.sqlite");
  private readonly children = new Set<ChildProcess>();
  private logs = 0;

  env(extra: Record<string, string> = {}) {
    return {
      ...process.env,
      ENTERPRISE_ADMIN_MASTER_KEY_FILE: join(this.dir, "master.key"),
      LOG_LEVEL: "info",
      ...extra,
    };
  }

  async cli(args: string[], env: Record<string, string> = {}) {
    return run(CLI, [...args, "--db", this.dbFile], { cwd: ROOT, env: this.env(env), maxBuffer: 64 * 2 ** 20 });
  }

  async start(env: Record<string, string> = {}): Promise<Server> {
    const port = await freePort();
    const logFile = join(this.dir, `server-${++this.logs}.log`);
    const out = openSync(logFile, "w");
    const child = spawn(CLI, ["serve", "--port", String(port), "--db", this.dbFile], {
      cwd: ROOT, env: this.env(env), stdio: ["ignore", out, "inherit"],
    });
    closeSync(out);
    this.children.add(child);
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolveExit) =>
      child.once("exit", (code, signal) => {
        this.children.delete(child);
        resolveExit({ code, signal });
      }));
    const baseUrl = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      try {
        const res = await fetch(`${baseUrl}/healthz`);
        if (res.ok) break;
      } catch {
        // not listening yet
      }
      if (i > 300) throw new Error("the server did not start in 30 s");
      await sleep(100);
    }
    return { baseUrl, port, child, logFile, exited };
  }

  async stop(server: Server) {
    server.child.kill("SIGTERM");
    await server.exited;
  }

  track<T extends ChildProcess>(child: T): T {
    this.children.add(child);
    child.once("exit", () => this.children.delete(child));
    return child;
  }

  close() {
    for (const child of this.children) child.kill("SIGKILL");
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

function logStats(file: string): { lines: number; bytes: number } {
  const text = readFileSync(file, "utf8");
  return { lines: text.split("\n").filter(Boolean).length, bytes: statSync(file).size };
}

/** Sockets that the server has not closed yet. */
const open = (sockets: { closedAt?: number }[]) => sockets.filter((s) => s.closedAt === undefined).length;

async function phaseTimeouts(ws: Workspace) {
  const server = await ws.start();
  const started = Date.now();
  const tracked: { kind: "slow" | "idle-h1" | "idle-h2"; closedAt?: number }[] = [];
  const timers: NodeJS.Timeout[] = [];

  for (let i = 0; i < num("slow-clients"); i++) {
    const entry: (typeof tracked)[number] = { kind: "slow" };
    tracked.push(entry);
    const socket = net.connect(server.port, "127.0.0.1", () => {
      socket.write(`POST ${REST_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\n`);
      timers.push(setInterval(() => socket.writable && socket.write(`X-Slow-${Date.now()}: 1\r\n`), 2000));
    });
    socket.on("error", () => {});
    socket.on("close", () => (entry.closedAt ??= Date.now() - started));
  }
  for (let i = 0; i < num("idle-clients"); i++) {
    const h1: (typeof tracked)[number] = { kind: "idle-h1" };
    tracked.push(h1);
    const socket = net.connect(server.port, "127.0.0.1", () => socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
    socket.on("data", () => {});
    socket.on("error", () => {});
    socket.on("close", () => (h1.closedAt ??= Date.now() - started));

    const h2: (typeof tracked)[number] = { kind: "idle-h2" };
    tracked.push(h2);
    const session = http2.connect(server.baseUrl);
    session.on("error", () => {});
    session.on("close", () => (h2.closedAt ??= Date.now() - started));
  }

  const { headersTimeoutMs: headersMs, keepAliveTimeoutMs: keepAliveMs, idleTimeoutMs: idleMs } = DEFAULT_LIMITS;
  const of = (kind: string) => tracked.filter((t) => t.kind === kind);
  const at = async (ms: number) => sleep(Math.max(0, ms - (Date.now() - started)));
  await at(keepAliveMs + 5000);
  const idleH1Held = open(of("idle-h1"));
  await at(headersMs + 5000);
  const slowHeld = open(of("slow"));
  await at(idleMs + 5000);
  const idleH2Held = open(of("idle-h2"));
  for (const timer of timers) clearInterval(timer);
  const lastClosed = (kind: string) => {
    const closed = of(kind).map((t) => t.closedAt).filter((t): t is number => t !== undefined);
    return closed.length === 0 ? "none closed" : `${round(Math.max(...closed) / 1000)} s`;
  };
  await ws.stop(server);
  return {
    "slowloris sockets": num("slow-clients"),
    [`slowloris held after ${headersMs / 1000 + 5} s`]: slowHeld,
    "slowloris last closed at": lastClosed("slow"),
    "idle HTTP/1.1 connections": num("idle-clients"),
    [`idle HTTP/1.1 held after ${keepAliveMs / 1000 + 5} s`]: idleH1Held,
    "idle HTTP/1.1 last closed at": lastClosed("idle-h1"),
    "idle HTTP/2 sessions": num("idle-clients"),
    [`idle HTTP/2 held after ${idleMs / 1000 + 5} s`]: idleH2Held,
    "idle HTTP/2 last closed at": lastClosed("idle-h2"),
  };
}

/** One Connect call every `intervalMs` on its own HTTP/2 session until `until()`; latencies in ms. */
async function healthyClient(baseUrl: string, token: string, intervalMs: number, until: () => boolean) {
  const latencies: number[] = [];
  let failures = 0;
  let session = http2.connect(baseUrl);
  session.on("error", () => {});
  while (!until()) {
    const began = performance.now();
    const ok = await new Promise<boolean>((resolveCall) => {
      if (session.closed || session.destroyed) {
        session = http2.connect(baseUrl);
        session.on("error", () => {});
      }
      const stream = session.request({ ":method": "POST", ":path": CONNECT_PATH, "content-type": "application/json", authorization: `Bearer ${token}` });
      let status = 0;
      stream.on("response", (headers) => (status = Number(headers[":status"])));
      stream.on("data", () => {});
      stream.on("error", () => resolveCall(false));
      stream.on("close", () => resolveCall(status === 200));
      stream.end(BODY);
    });
    const took = performance.now() - began;
    if (ok) latencies.push(took);
    else failures++;
    await sleep(Math.max(0, intervalMs - took));
  }
  session.close();
  return { latencies: latencies.sort((a, b) => a - b), failures };
}

async function phaseFlood(ws: Workspace, token: string) {
  const server = await ws.start();
  const pid = server.child.pid!;
  const seconds = num("flood-seconds");

  let stop = Date.now() + 5000;
  const before = await healthyClient(server.baseUrl, token, 20, () => Date.now() > stop);
  const rssBefore = rssMiB(pid);
  const logBefore = logStats(server.logFile);

  let rssPeak = rssBefore;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssMiB(pid))), 500);
  const flooder = ws.track(fork(join(ROOT, "bench/hostile-flood.ts"), [], { cwd: ROOT, execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] }));
  const flooded = new Promise<FloodTotals>((resolveFlood, reject) => {
    flooder.once("message", (message: { kind: string; result?: FloodTotals; message?: string }) =>
      message.kind === "result" ? resolveFlood(message.result!) : reject(new Error(message.message)));
    flooder.once("exit", (code) => code !== 0 && reject(new Error(`the flood process exited ${code}`)));
  });
  flooder.send({
    baseUrl: server.baseUrl,
    headers: { ":method": "POST", ":path": CONNECT_PATH, "content-type": "application/json" },
    sessions: num("flood-sessions"),
    durationMs: seconds * 1000,
    localAddress: "127.0.0.2",
  } satisfies FloodConfig);
  await sleep(1000); // the flood under way before the healthy client is timed
  stop = Date.now() + (seconds - 2) * 1000;
  const during = await healthyClient(server.baseUrl, token, 20, () => Date.now() > stop);
  const flood = await flooded;
  clearInterval(sampler);
  await sleep(2000);
  const rssAfter = rssMiB(pid);
  const logAfter = logStats(server.logFile);
  await ws.stop(server);
  return {
    "flood seconds": seconds,
    "flood streams sent and cancelled by the client": flood.streams,
    "flood connections opened": flood.sessions,
    "flood GOAWAYs received": flood.goaways,
    "healthy calls before / during": `${before.latencies.length} / ${during.latencies.length} (failed ${before.failures} / ${during.failures})`,
    "healthy p50 before / during (ms)": `${round(percentile(before.latencies, 50), 2)} / ${round(percentile(during.latencies, 50), 2)}`,
    "healthy p99 before / during (ms)": `${round(percentile(before.latencies, 99), 2)} / ${round(percentile(during.latencies, 99), 2)}`,
    "RSS before / peak / after (MiB)": `${round(rssBefore)} / ${round(rssPeak)} / ${round(rssAfter)}`,
    "RSS growth at peak (MiB)": round(rssPeak - rssBefore),
    "log lines / bytes written during the flood": `${logAfter.lines - logBefore.lines} / ${logAfter.bytes - logBefore.bytes}`,
  };
}

const RETRY_SAFE = new Set(["ECONNREFUSED", "ERR_HTTP2_GOAWAY_SESSION", "ERR_HTTP2_INVALID_SESSION", "ERR_HTTP2_STREAM_CANCEL"]);

async function phaseDrain(ws: Workspace, token: string) {
  const server = await ws.start({ RATE_LIMIT_RPS: "0" });
  const tally = { ok: 0, refused: 0, failed: 0, closeHeaders: 0, failures: new Map<string, number>() };
  let exitedAt: number | undefined;
  const fail = (why: string) => {
    tally.failed++;
    tally.failures.set(why, (tally.failures.get(why) ?? 0) + 1);
  };
  let signalledAt: number | undefined;

  const agent = new http.Agent({ keepAlive: true, maxSockets: 10 });
  const h1Worker = async () => {
    while (exitedAt === undefined) {
      await new Promise<void>((done) => {
        const req = http.request(`${server.baseUrl}${REST_PATH}`, {
          method: "POST", agent,
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "content-length": Buffer.byteLength(BODY) },
        }, (res) => {
          res.resume();
          res.on("end", () => {
            if (res.statusCode === 200) tally.ok++;
            else fail(`HTTP ${res.statusCode}`);
            if (signalledAt !== undefined && res.headers.connection === "close") tally.closeHeaders++;
            done();
          });
        });
        req.on("error", (error: NodeJS.ErrnoException) => {
          // A request written on a kept-alive socket that the server closed meanwhile never reached a
          // handler (Node's documented keep-alive race: retry-safe when req.reusedSocket).
          if (RETRY_SAFE.has(error.code ?? "") || (error.code === "ECONNRESET" && req.reusedSocket)) tally.refused++;
          else fail(error.code ?? error.message);
          setTimeout(done, 20);
        });
        req.end(BODY);
      });
    }
  };
  const h2Worker = async (session: { current: http2.ClientHttp2Session }) => {
    while (exitedAt === undefined) {
      await new Promise<void>((done) => {
        let stream: http2.ClientHttp2Stream;
        try {
          if (session.current.closed || session.current.destroyed) throw Object.assign(new Error("closed"), { code: "ERR_HTTP2_INVALID_SESSION" });
          stream = session.current.request({ ":method": "POST", ":path": CONNECT_PATH, "content-type": "application/json", authorization: `Bearer ${token}` });
        } catch (error) {
          tally.refused++;
          setTimeout(done, 20);
          return;
        }
        let status = 0;
        stream.on("response", (headers) => (status = Number(headers[":status"])));
        stream.on("data", () => {});
        stream.on("error", (error: NodeJS.ErrnoException) => {
          if (RETRY_SAFE.has(error.code ?? "") || stream.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM) tally.refused++;
          else fail(error.code ?? error.message);
        });
        stream.on("close", () => {
          if (status === 200) tally.ok++;
          else if (status !== 0) fail(`HTTP ${status}`);
          done();
        });
        stream.end(BODY);
      });
    }
  };
  const sessions = [0, 1].map(() => {
    const holder = { current: http2.connect(server.baseUrl) };
    holder.current.on("error", () => {});
    return holder;
  });
  const workers = [
    ...Array.from({ length: 10 }, h1Worker),
    ...Array.from({ length: 10 }, (_, i) => h2Worker(sessions[i % 2]!)),
  ];
  await sleep(2000);
  const okBefore = tally.ok;
  signalledAt = performance.now();
  server.child.kill("SIGTERM");
  const exit = await server.exited;
  exitedAt = performance.now();
  await Promise.all(workers);
  agent.destroy();
  for (const s of sessions) s.current.destroy();
  return {
    "load": "10 HTTP/1.1 keep-alive clients + 10 HTTP/2 streams, back to back",
    "calls answered 200 before the signal": okBefore,
    "calls answered 200 after the signal": tally.ok - okBefore,
    "responses with Connection: close after the signal": tally.closeHeaders,
    "calls refused before reaching a handler (retry-safe)": tally.refused,
    "calls failed": `${tally.failed}${tally.failed ? ` (${[...tally.failures].map(([k, v]) => `${k}: ${v}`).join(", ")})` : ""}`,
    "SIGTERM to exit (ms)": round(exitedAt - signalledAt, 0),
    "exit status": exit.signal ?? exit.code,
  };
}

async function phaseRotation(ws: Workspace, token: string) {
  const server = await ws.start({ RATE_LIMIT_RPS: "0" });
  let writing = true;
  let created = 0;
  let failed = 0;
  const writer = (async () => {
    for (let i = 0; writing; i++) {
      const res = await fetch(`${server.baseUrl}/api/v1/environment_configs`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ name: `rotation-${i}`, secrets: { API_KEY: `value-${i}` }, environment_variables: { N: String(i) } }),
      });
      await res.arrayBuffer();
      if (res.ok) created++;
      else failed++;
    }
  })();
  const rotations: string[] = [];
  for (let i = 0; i < 2; i++) {
    await sleep(1000);
    try {
      await ws.cli(["keys", "rotate"]);
      rotations.push("exit 0");
    } catch (error) {
      rotations.push(`exit ${(error as { code?: number }).code}: ${String((error as { stderr?: string }).stderr ?? "").trim().split("\n").pop()}`);
    }
  }
  await sleep(1000);
  writing = false;
  await writer;
  // A write after the last rotation, by the server that ran through both.
  const after = await fetch(`${server.baseUrl}/api/v1/environment_configs`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "after-rotations", secrets: { API_KEY: "after" } }),
  });
  await after.arrayBuffer();
  await ws.stop(server);
  let verify: string;
  try {
    const { stdout } = await ws.cli(["keys", "verify"]);
    verify = `exit 0 ${stdout.trim().replace(/\s+/g, " ").slice(0, 200)}`;
  } catch (error) {
    verify = `exit ${(error as { code?: number }).code}: ${String((error as { stderr?: string }).stderr ?? "").trim().slice(0, 300)}`;
  }
  return {
    "configurations created during the rotations": created,
    "creates refused": failed,
    "rotations": rotations.join("; "),
    "create after both rotations": after.status,
    "keys verify": verify,
  };
}

function print(title: string, figures: Record<string, unknown>) {
  console.log(`\n${title}`);
  const width = Math.max(...Object.keys(figures).map((k) => k.length));
  for (const [key, value] of Object.entries(figures)) console.log(`  ${key.padEnd(width)}  ${value}`);
}

async function main() {
  const ws = new Workspace();
  process.once("SIGINT", () => {
    ws.close();
    process.exit(130);
  });
  try {
    const { stdout } = await ws.cli(["seed", "--demo"]);
    const token = stdout.trim().split("\n").pop()!;
    const limits = DEFAULT_LIMITS;
    console.log(`hostile-client benchmark: node ${process.version}; the server's defaults: headers ${limits.headersTimeoutMs / 1000} s, ` +
      `keep-alive ${limits.keepAliveTimeoutMs / 1000} s, idle HTTP/2 ${limits.idleTimeoutMs / 1000} s, grace ${limits.shutdownGraceMs / 1000} s, ` +
      `${limits.http2MaxResetsPer10s} resets a session in 10 s`);
    const phases = new Set(options.only!.split(",").map((p) => p.trim()));
    if (phases.has("1")) print("1. slowloris and idle connections", await phaseTimeouts(ws));
    if (phases.has("2")) print("2. HTTP/2 rapid-reset flood", await phaseFlood(ws, token));
    if (phases.has("3")) print("3. SIGTERM under keep-alive load", await phaseDrain(ws, token));
    if (phases.has("4")) print("4. key rotation during writes", await phaseRotation(ws, token));
  } finally {
    ws.close();
  }
}

await main();
