// Benchmark: batch-get of 100 departments, through every transport, against a hand-written floor.
// Prints figures; it is not a test. `npm run bench` (options: --duration S, --warmup S, --profile,
// --only rest,connect,grpc,floor to measure some paths only, e.g. to profile one of them;
// --grpc-no-gzip to make the gRPC client advertise no compression: by default it advertises gzip,
// as stock gRPC clients do, and the service then gzips every response of 1 KiB or more).
//
// Set-up: a temp SQLite database, migrated and seeded by importDirectory with one enterprise and a
// tree of DEPARTMENTS departments, and an access token with departments:read. Then, on 127.0.0.1:
//   (a) REST facade   POST /openapi/v1/departments/batch-get                       autocannon
//   (b) Connect JSON  POST /enterprise_admin.v1.DepartmentService/BatchGetDepartments autocannon
//   (c) gRPC (h2c)    the same RPC, from bench/grpc-load.ts in a child process
//   (d) floor         bench/floor-server.ts: node:http + one cached prepared statement, same SQL
// The service runs as `node bin/enterprise-admin.mjs serve` in a child process with LOG_LEVEL=info
// (its access log goes to a file: logging is part of what is measured); the floor runs in another
// child process. Only one server is up while it is measured. Before measuring, all four paths must
// return the same items in the same order. Children and temp files are removed at the end.
//
// --profile runs the service under `node --cpu-prof` and prints the top self-time functions
// (the profiler slows the service down; the figures of that run are not comparable).
import { fork, spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { freePort } from "./free-port.js";
import autocannon from "autocannon";
import type { DirectoryFile } from "../src/domain/directory-file.js";
import { AccessAdmin } from "../src/operations/access-admin.js";
import { importDirectory } from "../src/operations/import-directory.js";
import { AuthRepository } from "../src/storage/auth-repository.js";
import { migrateToLatest, openDatabase } from "../src/storage/database.js";
import { DirectoryRepository } from "../src/storage/directory-repository.js";
import type { GrpcLoadConfig, GrpcLoadResult } from "./grpc-load.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const ENTERPRISE_ID = "bench-corp";
const DEPARTMENTS = 2000;
const BATCH = 100;
const CONNECTIONS = 50;
const GRPC_CONNECTIONS = 4;
const TARGET_REST_SHARE = 0.6;

const { values: flags } = parseArgs({
  options: {
    duration: { type: "string", default: process.env.BENCH_DURATION ?? "8" },
    warmup: { type: "string", default: process.env.BENCH_WARMUP ?? "2" },
    profile: { type: "boolean", default: false },
    only: { type: "string", default: "rest,connect,grpc,floor" },
    "grpc-no-gzip": { type: "boolean", default: false },
  },
});
const PATHS = ["rest", "connect", "grpc", "floor"];
const ONLY = new Set(flags.only.split(",").map((p) => p.trim()));
for (const p of ONLY) if (!PATHS.includes(p)) throw new Error(`--only: "${p}" is not one of ${PATHS.join(", ")}`);
const DURATION_S = Number(flags.duration);
const WARMUP_S = Number(flags.warmup);

interface Item {
  department_id: string;
  parent_department_id: string;
  name: string;
  full_path: string;
  depth: number;
}

interface Figures {
  path: string;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  requests: number;
  bad: number;
  note?: string;
  /** The server process's CPU use while measured: share of one core, and CPU microseconds per request. */
  serverCpuShare?: number;
  serverCpuUsPerRequest?: number;
}

// ---------- set-up ----------

/** One enterprise and a tree of `count` departments: each has up to 8 children, 4 levels deep. */
function directoryFile(count: number): DirectoryFile {
  const id = (i: number) => `dept-${String(i).padStart(5, "0")}`;
  const departments = [];
  for (let i = 0; i < count; i++) {
    departments.push({
      department_id: id(i),
      parent_department_id: i === 0 ? "0" : id(Math.floor((i - 1) / 8)),
      name: i === 0 ? "Bench Corp" : `Department ${i} (${["Sales", "R&D", "Ops", "Finance", "Legal", "Support", "HR", "IT"][i % 8]})`,
    });
  }
  return { enterprise: { enterprise_id: ENTERPRISE_ID, name: "Bench Corp", currency: "CNY" }, departments, members: [] };
}

/** 100 distinct existing IDs spread over the tree, in a scrambled (not sorted) order. */
function requestIds(): string[] {
  const ids: string[] = [];
  let x = 12345;
  const seen = new Set<number>();
  while (ids.length < BATCH) {
    x = (x * 1103515245 + 12345) % 2147483648;
    const i = 1 + (x % (DEPARTMENTS - 1));
    if (seen.has(i)) continue;
    seen.add(i);
    ids.push(`dept-${String(i).padStart(5, "0")}`);
  }
  return ids;
}

async function seed(dbFile: string): Promise<string> {
  const database = openDatabase(dbFile);
  try {
    await migrateToLatest(database);
    await importDirectory(database, directoryFile(DEPARTMENTS));
    const access = new AccessAdmin(new AuthRepository(database), new DirectoryRepository(database.db));
    return (await access.createToken(ENTERPRISE_ID, ["departments:read"], 3600)).accessToken;
  } finally {
    await database.close();
  }
}

// ---------- child processes ----------

const children = new Set<ChildProcess>();

function track(child: ChildProcess, name: string): ChildProcess {
  children.add(child);
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  child.once("exit", (code, signal) => {
    children.delete(child);
    if (code !== 0 && code !== null && !stopping.has(child)) {
      console.error(`[bench] ${name} exited with code ${code}${signal ? ` (${signal})` : ""}\n${stderr}`);
    }
  });
  return child;
}

const stopping = new Set<ChildProcess>();

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the child has exited. */
async function stop(child: ChildProcess | undefined, graceMs = 5000): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  stopping.add(child);
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

function startService(port: number, dbFile: string, logFile: string, profileDir: string | undefined): ChildProcess {
  const log = openSync(logFile, "a");
  const nodeFlags = profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [];
  const child = spawn(process.execPath, ["--max-semi-space-size=64", "--min-semi-space-size=64", ...nodeFlags, join(ROOT, "bin/enterprise-admin.mjs"), "serve", "--port", String(port), "--host", "127.0.0.1", "--db", dbFile], {
    cwd: ROOT,
    // Throughput is what is measured here, not the per-app rate limit.
    env: { ...process.env, LOG_LEVEL: "info", RATE_LIMIT_RPS: "0" },
    stdio: ["ignore", log, "pipe"],
  });
  closeSync(log);
  return track(child, "service");
}

function startFloor(port: number, dbFile: string): ChildProcess {
  const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "bench/floor-server.ts"), "--port", String(port), "--db", dbFile, "--enterprise", ENTERPRISE_ID], {
    cwd: ROOT,
    stdio: ["ignore", "ignore", "pipe"],
  });
  return track(child, "floor server");
}

/**
 * Runs bench/grpc-load.ts in a forked child; resolves with its verify items and (unless verifyOnly)
 * its result, plus the CPU seconds `server` used between the end of the warm-up and the result.
 */
async function runGrpcLoad(config: GrpcLoadConfig, server?: ChildProcess): Promise<{ items: Item[]; result?: GrpcLoadResult; serverCpu?: number }> {
  const child = track(fork(join(ROOT, "bench/grpc-load.ts"), [], { cwd: ROOT, execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "pipe", "ipc"] }), "gRPC load generator");
  return new Promise((done, fail) => {
    let items: Item[] | undefined;
    let result: GrpcLoadResult | undefined;
    let cpuAtStart: number | undefined;
    let serverCpu: number | undefined;
    child.on("message", (message: { kind: string; items?: Item[]; result?: GrpcLoadResult; message?: string }) => {
      if (message.kind === "verify") items = message.items;
      else if (message.kind === "measuring") cpuAtStart = cpuSeconds(server?.pid);
      else if (message.kind === "result") {
        result = message.result;
        const cpuAtEnd = cpuSeconds(server?.pid);
        if (cpuAtStart !== undefined && cpuAtEnd !== undefined) serverCpu = cpuAtEnd - cpuAtStart;
      }
      else if (message.kind === "error") fail(new Error(`gRPC load generator: ${message.message}`));
    });
    child.once("exit", (code) => {
      if (!items || (!config.verifyOnly && !result)) fail(new Error(`gRPC load generator exited (code ${code}) without a result`));
      else done({ items, result, serverCpu });
    });
    child.send(config);
  });
}

async function waitUntilAnswering(name: string, probe: () => Promise<Response>, child: ChildProcess, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited before answering`);
    try {
      const response = await probe();
      await response.arrayBuffer();
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${name} did not answer within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// ---------- measuring ----------

/** CPU seconds (user + system) a process has used so far, from /proc (Linux); undefined elsewhere. */
function cpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS; // utime, stime
  } catch {
    return undefined;
  }
}
const CLOCK_TICKS = 100;

/** Runs `load` and adds the server's CPU use during it: share of one core and CPU time per request. */
async function withServerCpu(server: ChildProcess, load: () => Promise<Figures & { seconds: number }>): Promise<Figures> {
  const before = cpuSeconds(server.pid);
  const figures = await load();
  const after = cpuSeconds(server.pid);
  if (before === undefined || after === undefined) return figures;
  return { ...figures, serverCpuShare: (after - before) / figures.seconds, serverCpuUsPerRequest: ((after - before) * 1e6) / figures.requests };
}

async function httpLoad(path: string, server: ChildProcess, url: string, headers: Record<string, string>, body: string): Promise<Figures> {
  const options = { url, method: "POST", headers, body, connections: CONNECTIONS, pipelining: 1 };
  await autocannon({ ...options, duration: WARMUP_S });
  return withServerCpu(server, async () => {
    const r = await autocannon({ ...options, duration: DURATION_S });
    return {
      seconds: r.duration,
      path,
      rps: r.requests.total / r.duration,
      p50Ms: r.latency.p50,
      p99Ms: r.latency.p99,
      meanMs: r.latency.mean,
      requests: r.requests.total,
      bad: r.non2xx + r.errors + r.timeouts,
    };
  });
}

async function postJson(url: string, headers: Record<string, string>, body: string): Promise<unknown> {
  const response = await fetch(url, { method: "POST", headers, body });
  const text = await response.text();
  if (!response.ok) throw new Error(`POST ${url}: HTTP ${response.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/** REST and floor answer in the envelope; Connect JSON with proto field names omits zero values. */
function itemsOf(name: string, json: unknown, envelope: boolean): Item[] {
  const data = (envelope ? (json as { code: number; data: { items: Item[] } }) : { code: 0, data: json as { items: Item[] } });
  if (data.code !== 0 || !Array.isArray(data.data?.items)) throw new Error(`${name}: unexpected answer ${JSON.stringify(json).slice(0, 300)}`);
  return data.data.items.map((d) => ({ department_id: d.department_id, parent_department_id: d.parent_department_id, name: d.name, full_path: d.full_path, depth: d.depth ?? 0 }));
}

function checkSame(expectedIds: string[], answers: Record<string, Item[]>): void {
  const reference = JSON.stringify(answers["floor"]);
  for (const [name, items] of Object.entries(answers)) {
    const ids = items.map((d) => d.department_id);
    if (ids.length !== expectedIds.length || ids.some((id, i) => id !== expectedIds[i])) {
      throw new Error(`${name}: items are not the ${expectedIds.length} requested ids in request order (got ${ids.length}: ${ids.slice(0, 5).join(", ")}…)`);
    }
    if (JSON.stringify(items) !== reference) throw new Error(`${name}: items differ from the floor's`);
  }
}

// ---------- profile ----------

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

function summarizeProfile(dir: string): void {
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".cpuprofile")) : [];
  if (files.length === 0) {
    console.log("\n(no CPU profile was written)");
    return;
  }
  const profile = JSON.parse(readFileSync(join(dir, files[0]!), "utf8")) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  let total = 0;
  const byFunction = new Map<string, number>();
  const byArea = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const frame = nodes.get(id)!.callFrame;
    total += us;
    const url = frame.url.replace(`file://${ROOT}/`, "");
    const key = `${frame.functionName || "(anonymous)"}  ${url}${url ? `:${frame.lineNumber + 1}` : ""}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    const area = url.startsWith("src/") || url.startsWith("gen/") ? url
      : /node_modules\/((@[^/]+\/)?[^/]+)/.exec(url)?.[1] ?? (url.startsWith("node:") ? "node internals" : frame.functionName.startsWith("(") ? frame.functionName : "native/other");
    byArea.set(area, (byArea.get(area) ?? 0) + us);
  }
  const top = (map: Map<string, number>, n: number, filter: (k: string) => boolean = () => true) =>
    [...map].filter(([k]) => filter(k)).sort((a, b) => b[1] - a[1]).slice(0, n)
      .map(([k, us]) => `  ${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`).join("\n");
  console.log(`\nCPU profile of the service (${(total / 1e6).toFixed(1)} s sampled, self time):`);
  console.log(`by file / package:\n${top(byArea, 15)}`);
  console.log(`top functions:\n${top(byFunction, 20)}`);
  console.log(`top functions in src/ and gen/:\n${top(byFunction, 15, (k) => / (src|gen)\//.test(k))}`);
}

// ---------- main ----------

const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
const pct = (share: number) => (Number.isFinite(share) ? `${(share * 100).toFixed(0)}%` : "n/a");

let tempDir: string | undefined;

async function main(): Promise<void> {
  const began = Date.now();
  const startLoad = loadavg();
  const dir = mkdtempSync(join(tmpdir(), "ea-bench-"));
  tempDir = dir;
  const dbFile = join(dir, "bench.sqlite");
  const logFile = join(dir, "service.log");
  const profileDir = flags.profile ? join(dir, "profile") : undefined;
  let service: ChildProcess | undefined;
  let floor: ChildProcess | undefined;
  try {
    const token = await seed(dbFile);
    const ids = requestIds();
    const body = JSON.stringify({ department_ids: ids });
    const auth = { authorization: `Bearer ${token}` };
    const restHeaders = { ...auth, "content-type": "application/json" };
    const connectHeaders = { ...auth, "content-type": "application/json", "connect-protocol-version": "1" };
    const floorHeaders = { "content-type": "application/json" };

    const servicePort = await freePort();
    const floorPort = await freePort();
    const base = `http://127.0.0.1:${servicePort}`;
    const floorBase = `http://127.0.0.1:${floorPort}`;
    const restUrl = `${base}/openapi/v1/departments/batch-get`;
    const connectUrl = `${base}/enterprise_admin.v1.DepartmentService/BatchGetDepartments`;
    const floorUrl = `${floorBase}/openapi/v1/departments/batch-get`;
    const grpcConfig: GrpcLoadConfig = {
      baseUrl: base, token, ids, concurrency: CONNECTIONS, connections: GRPC_CONNECTIONS,
      warmupMs: WARMUP_S * 1000, durationMs: DURATION_S * 1000, identityOnly: flags["grpc-no-gzip"],
    };

    service = startService(servicePort, dbFile, logFile, profileDir);
    floor = startFloor(floorPort, dbFile);
    await Promise.all([
      waitUntilAnswering("service", () => fetch(`${base}/healthz`), service),
      waitUntilAnswering("floor server", () => fetch(floorUrl, { method: "POST", headers: floorHeaders, body }), floor),
    ]);

    // The same items, in request order, from all four paths.
    const answers: Record<string, Item[]> = {
      floor: itemsOf("floor", await postJson(floorUrl, floorHeaders, body), true),
      rest: itemsOf("REST", await postJson(restUrl, restHeaders, body), true),
      connect: itemsOf("Connect JSON", await postJson(connectUrl, connectHeaders, body), false),
      grpc: (await runGrpcLoad({ ...grpcConfig, verifyOnly: true })).items,
    };
    checkSame(ids, answers);
    console.log(`verified: floor, REST, Connect JSON and gRPC return the same ${ids.length} items in request order`);
    console.log(`set-up: ${DEPARTMENTS} departments, batch of ${BATCH} ids, ${CONNECTIONS} connections (gRPC: ${CONNECTIONS} in-flight calls over ${GRPC_CONNECTIONS} HTTP/2 connections), ` +
      `pipelining 1, warm-up ${WARMUP_S} s + ${DURATION_S} s per path; service LOG_LEVEL=info${profileDir ? ", under --cpu-prof" : ""}`);

    // The service alone: the floor server is stopped while the service is loaded, and vice versa.
    await stop(floor);
    const figures: Figures[] = [];
    const report = (f: Figures) => {
      figures.push(f);
      console.log(`  measured ${f.path}: ${fmt(f.rps, 0)} req/s`);
    };
    if (ONLY.has("rest")) report(await httpLoad("(a) REST facade", service, restUrl, restHeaders, body));
    if (ONLY.has("connect")) report(await httpLoad("(b) Connect JSON", service, connectUrl, connectHeaders, body));
    if (ONLY.has("grpc")) {
      const { result: grpc, serverCpu } = await runGrpcLoad(grpcConfig, service);
      report({
        path: `(c) gRPC (h2c${grpcConfig.identityOnly ? ", no gzip" : ", gzip"})`, rps: grpc!.rps, p50Ms: grpc!.p50Ms, p99Ms: grpc!.p99Ms, meanMs: grpc!.meanMs, requests: grpc!.requests, bad: grpc!.errors,
        serverCpuShare: serverCpu === undefined ? undefined : serverCpu / (grpc!.elapsedMs / 1000),
        serverCpuUsPerRequest: serverCpu === undefined ? undefined : (serverCpu * 1e6) / grpc!.requests,
        note: `load generator used ${fmt(grpc!.clientCpuShare * 100, 0)}% of a core${grpc!.firstError ? `; first error: ${grpc!.firstError}` : ""}`,
      });
    }
    await stop(service);
    const logLines = existsSync(logFile) ? readFileSync(logFile, "utf8").split("\n").filter((l) => l.includes('"msg":"request"')).length : 0;

    if (ONLY.has("floor")) {
      floor = startFloor(floorPort, dbFile);
      await waitUntilAnswering("floor server", () => fetch(floorUrl, { method: "POST", headers: floorHeaders, body }), floor);
      report(await httpLoad("(d) floor (node:http + SQL)", floor, floorUrl, floorHeaders, body));
      await stop(floor);
    }

    const floorFigures = figures.find((f) => f.path.startsWith("(d)"));
    const rpsRatio = (f: Figures) => (floorFigures ? f.rps / floorFigures.rps : NaN);
    const cpuRatio = (f: Figures) => (f.serverCpuUsPerRequest && floorFigures?.serverCpuUsPerRequest ? floorFigures.serverCpuUsPerRequest / f.serverCpuUsPerRequest : NaN);
    console.log("");
    console.log(`${"path".padEnd(30)} ${"req/s".padStart(7)} ${"p50 ms".padStart(7)} ${"p99 ms".padStart(7)} ${"mean ms".padStart(8)} ${"requests".padStart(8)} ${"bad".padStart(4)} ${"srv CPU".padStart(7)} ${"CPU µs/req".padStart(10)} ${"rps vs floor".padStart(12)} ${"CPU/req: floor÷path".padStart(19)}`);
    for (const f of figures) {
      console.log(`${f.path.padEnd(30)} ${fmt(f.rps, 0).padStart(7)} ${fmt(f.p50Ms).padStart(7)} ${fmt(f.p99Ms).padStart(7)} ${fmt(f.meanMs, 2).padStart(8)} ${String(f.requests).padStart(8)} ${String(f.bad).padStart(4)} ` +
        `${pct(f.serverCpuShare ?? NaN).padStart(7)} ${fmt(f.serverCpuUsPerRequest ?? NaN, 0).padStart(10)} ${pct(rpsRatio(f)).padStart(12)} ${pct(cpuRatio(f)).padStart(19)}${f.note ? `  (${f.note})` : ""}`);
    }
    console.log("(autocannon latencies have 1 ms resolution; gRPC latencies are exact. srv CPU: the server process's CPU use while measured, as a share of one core;");
    console.log(" below ~95% the server was not saturated (other processes competing for the cores, or a client-side limit) and its req/s understates it; CPU µs/req is less sensitive to that)");
    const load = loadavg();
    console.log(`machine: ${availableParallelism()} cores, load average ${load.map((l) => l.toFixed(2)).join(" ")} (1/5/15 min) at the end; at the start ${startLoad.map((l) => l.toFixed(2)).join(" ")}`);
    console.log(`service access-log lines written: ${logLines}`);
    const rest = figures.find((f) => f.path.startsWith("(a)"));
    if (rest && floorFigures) {
      const restShare = rpsRatio(rest);
      console.log(`\ntarget: REST facade >= ${TARGET_REST_SHARE * 100}% of the floor's req/s -> ${fmt(restShare * 100, 0)}%: ${restShare >= TARGET_REST_SHARE ? "MET" : "NOT MET"}` +
        ` (by CPU per request: ${fmt(cpuRatio(rest) * 100, 0)}%)`);
    }
    if (figures.some((f) => f.bad > 0)) console.log("WARNING: some requests failed (see non-2xx/err); those figures are not valid");
    if (profileDir) summarizeProfile(profileDir);
    console.log(`\ntotal bench time: ${fmt((Date.now() - began) / 1000)} s`);
  } catch (error) {
    // The service's own lines (not its access log) usually say why a path failed.
    const lines = existsSync(logFile) ? readFileSync(logFile, "utf8").split("\n").filter((l) => l && !l.includes('"msg":"request"')) : [];
    if (lines.length > 0) console.error(`[bench] service log (without access lines), last ${Math.min(20, lines.length)}:\n${lines.slice(-20).join("\n")}`);
    throw error;
  } finally {
    await Promise.all([...children].map((child) => stop(child, 3000)));
    rmSync(dir, { recursive: true, force: true });
  }
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    for (const child of children) child.kill("SIGKILL");
    if (tempDir) rmSync(tempDir, { recursive: true, force: true });
    process.exit(130);
  });
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.stack ?? error.message : error);
  process.exitCode = 1;
});
