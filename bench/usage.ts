// Benchmark: the usage store at scale. Prints figures; it is not a test. `npm run bench:usage`
// (options: --events N (default 10,000,000), --members, --models, --queries per window,
// --rpc-batches, --keep DIR to reuse a generated store, --postgres URL --pg-events N for the import,
// ingestion RPC and query figures on PostgreSQL from a store of that size).
//
// On SQLite, in one run:
//   (1) the import rate of an NDJSON file of N events into an empty store, rollups included
//       (the real `importUsage`, the code behind `enterprise-admin import usage`);
//   (2) the ingestion RPC's rate into the full store: the real server in a child process, the
//       Connect client sending batches of 1,000 new events one after another; then the report that
//       meets the most events API batches hold pending (50,000), which adds them to the rollups first;
//   (3) the query's p50/p99 for 100 members over 180 days, over 30 days and over a window starting
//       and ending at unaligned seconds, through the service's own handler, each beside the same
//       answer computed by a plain scan of the raw events through a member-first covering index
//       (made for the benchmark and dropped after it: the service itself keeps no such index)
//       (the two answers must be equal, or the run fails);
//   (4) the database size;
//   with --postgres, (1) to (3) again on a fresh store of --pg-events events in that database.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, existsSync, fsyncSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { freePort } from "./free-port.js";
import { performance } from "node:perf_hooks";
import { createClient, createContextValues, createHandlerContext } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { sql } from "kysely";
import { UsageService } from "../gen/enterprise_admin/v1/usage_pb.js";
import { create } from "@bufbuild/protobuf";
import { QueryUserModelUsageRequestSchema } from "../gen/enterprise_admin/v1/usage_pb.js";
import { formatMicros } from "../src/domain/money.js";
import { callerKey } from "../src/interceptors/auth.js";
import { AccessAdmin } from "../src/operations/access-admin.js";
import { importDirectory } from "../src/operations/import-directory.js";
import { importUsage } from "../src/operations/import-usage.js";
import { UsageReports } from "../src/operations/usage-report.js";
import { usageService } from "../src/services/usage-service.js";
import { DepartmentRepository } from "../src/storage/department-repository.js";
import { AuthRepository } from "../src/storage/auth-repository.js";
import { migrateToLatest, openDatabase, type Database } from "../src/storage/database.js";
import { DirectoryRepository } from "../src/storage/directory-repository.js";
import { UsageRepository } from "../src/storage/usage-repository.js";
import { benchDirectory, memberId, modelOf, random, writeUsageFile, YEAR_START } from "./usage-data.js";

/**
 * Queries of each window run before the timed ones and not counted: a fresh process compiles the
 * query's code and sizes its heap over its first few dozen queries (measured: the slowest of 200
 * were the first 25, at 2-4 times the p50), which a running service has long done.
 */
const WARM_UP_QUERIES = 25;
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const ENTERPRISE_ID = "bench";
const DAY = 86_400;

const { values: flags } = parseArgs({
  options: {
    events: { type: "string", default: "10000000" },
    members: { type: "string", default: "5000" },
    models: { type: "string", default: "20" },
    queries: { type: "string", default: "200" },
    "rpc-batches": { type: "string", default: "60" },
    keep: { type: "string" },
    postgres: { type: "string" },
    "pg-events": { type: "string", default: "1000000" },
  },
});
const shape = { enterpriseId: ENTERPRISE_ID, members: Number(flags.members), models: Number(flags.models), events: Number(flags.events) };

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function main() {
  const dir = flags.keep ?? mkdtempSync(join(tmpdir(), "eadmin-usage-bench-"));
  mkdirSync(dir, { recursive: true });
  const dbPath = join(dir, "usage.sqlite");
  const ndjson = join(dir, "events.ndjson");
  const reuse = flags.keep !== undefined && existsSync(dbPath);
  console.log(`usage benchmark: ${fmt(shape.events)} events, ${fmt(shape.members)} members, ${shape.models} models, one year; store in ${dir}`);
  try {
    let database = openDatabase(dbPath);
    await migrateToLatest(database);
    if (!reuse) {
      await importDirectory(database, benchDirectory(shape));
      let t = performance.now();
      await writeUsageFile(ndjson, shape);
      console.log(`generated ${fmt(statSync(ndjson).size / 2 ** 20)} MiB of NDJSON in ${fmt((performance.now() - t) / 1000, 1)} s`);
      t = performance.now();
      const summary = await importUsage(new UsageRepository(database), ENTERPRISE_ID, ndjson);
      const seconds = (performance.now() - t) / 1000;
      console.log(`(1) import:        ${fmt(summary.recorded)} events in ${fmt(seconds, 1)} s = ${fmt(summary.recorded / seconds)} events/s  (target >= 100,000)`);
      rmSync(ndjson, { force: true });
    } else {
      console.log("(1) import:        skipped (reusing the store in --keep)");
    }
    await database.close();
    // The import's pages on the disk before the ingestion is timed: else the kernel writes them back
    // during it, and a checkpoint's fsync waits for hundreds of megabytes that are not the batches'.
    const file = openSync(dbPath, "r+");
    fsyncSync(file);
    closeSync(file);

    await measureIngestion("(2) ingestion RPC", dbPath, "  (target >= 15,000)");

    database = openDatabase(dbPath);
    await measureQueries(database, "SQLite", shape.members);
    await database.close();
    console.log(`(4) database size: ${fmt(sizeOf(dir, "usage.sqlite") / 2 ** 20)} MiB (file and WAL)`);

    if (flags.postgres) await postgresFigures(flags.postgres, Number(flags["pg-events"]), dir);
  } finally {
    if (!flags.keep) rmSync(dir, { recursive: true, force: true });
  }
}

/** (2) The ingestion RPC into the full store (a SQLite file or a postgres:// URL), through the real server and the Connect client. */
async function measureIngestion(label: string, dbPath: string, target = "") {
  const batches = Number(flags["rpc-batches"]);
  if (batches === 0) return console.log(`${label}: skipped (--rpc-batches 0)`);
  const database = openDatabase(dbPath);
  const token = (await new AccessAdmin(new AuthRepository(database), new DirectoryRepository(database.db))
    .createToken(ENTERPRISE_ID, ["usage:write", "statistics:read"], 3600)).accessToken;
  await database.close();
  const port = await freePort();
  const server = spawn(join(ROOT, "bin/enterprise-admin.mjs"), ["serve", "--port", String(port), "--db", dbPath],
    { env: { ...process.env, LOG_LEVEL: "warn", RATE_LIMIT_RPS: "0" }, stdio: ["ignore", "ignore", "inherit"] });
  try {
    await waitForPort(port);
    const client = createClient(UsageService, createConnectTransport({ baseUrl: `http://127.0.0.1:${port}`, httpVersion: "1.1", useBinaryFormat: true }));
    const rand = random(7);
    const headers = { authorization: `Bearer ${token}` };
    const run = Date.now().toString(36); // new event ids on every run, also over a reused store
    const makeBatch = (b: number) => Array.from({ length: 1000 }, (_, i) => {
      const model = modelOf(Math.floor(rand() * shape.models));
      return {
        eventId: `rpc-${run}-${b}-${i}`, userId: memberId(Math.floor(rand() * shape.members)), modelName: model.name, modelType: model.type,
        modelSource: model.source, timestamp: BigInt(YEAR_START + 364 * DAY + Math.floor(rand() * DAY)),
        inputTokens: BigInt(500 + Math.floor(rand() * 5000)), outputTokens: BigInt(100 + Math.floor(rand() * 1000)),
        basicAmount: model.source === "Builtin" ? "0.003000" : "", payGoAmount: "",
      };
    });
    for (let w = 0; w < 3; w++) await client.recordUsageEvents({ events: makeBatch(-1 - w) }, { headers }); // warm-up
    const prepared = Array.from({ length: batches }, (_, b) => makeBatch(b));
    const latencies: number[] = [];
    const started = performance.now();
    for (const events of prepared) {
      const t = performance.now();
      const reply = await client.recordUsageEvents({ events }, { headers });
      if (reply.recorded !== 1000) throw new Error(`ingestion recorded ${reply.recorded} of 1000`);
      latencies.push(performance.now() - t);
    }
    const seconds = (performance.now() - started) / 1000;
    latencies.sort((a, b) => a - b);
    console.log(`${label}: ${fmt(batches * 1000)} events in ${batches} batches of 1,000 in ${fmt(seconds, 1)} s = ` +
      `${fmt((batches * 1000) / seconds)} events/s, per batch p50 ${fmt(percentile(latencies, 50), 1)} ms, p99 ${fmt(percentile(latencies, 99), 1)} ms${target}`);

    // A report adds the events held pending first: one report with none pending (which also warms the report's code), 50 more batches
    // (50,000 events, the most held pending), then the report that adds them, and the same report again.
    const report = async () => {
      const t = performance.now();
      await client.getUsageReport({ startTime: BigInt(YEAR_START + 185 * DAY), endTime: BigInt(YEAR_START + 365 * DAY), bucket: "day", groupBy: ["model"] }, { headers });
      return performance.now() - t;
    };
    await report();
    for (let b = 0; b < 50; b++) await client.recordUsageEvents({ events: makeBatch(batches + b) }, { headers });
    const [first, next] = [await report(), await report()];
    console.log(`    report of 180 days by model, the whole enterprise: ${fmt(first, 1)} ms after 50 more batches (it adds their 50,000 pending events ` +
      `to the rollups), then ${fmt(next, 1)} ms`);
  } finally {
    server.kill("SIGTERM");
    await new Promise((r) => server.once("exit", r));
  }
}

/** (3) Query latency through the service's handler, and the same answer by a plain raw scan. */
async function measureQueries(database: Database, label: string, members: number) {
  const usage = new UsageRepository(database);
  const handlers = usageService(usage, new DirectoryRepository(database.db), new UsageReports(usage, new DepartmentRepository(database.db)));
  const principal = { enterpriseId: ENTERPRISE_ID, appId: null, permissions: new Set(["statistics:read"]), tokenId: "bench", expiresAt: 0 };
  const call = createHandlerContext({
    service: UsageService, method: UsageService.method.queryUserModelUsage, protocolName: "bench", requestMethod: "POST", url: "/",
    contextValues: createContextValues().set(callerKey, { principal }),
  });
  console.log(`(3) query on ${label}, 100 members, ${flags.queries} queries per window (handler: members, running totals and raw partial days, formatting):`);
  // A running service's page cache holds the tables the query reads; a fresh process's does not.
  // One pass over them stands for that. The events first: the store is larger than the 1 GiB cache,
  // and the running totals are what every query reads, so they are the pages a running service keeps.
  const warm = performance.now();
  await sql`select sum(model_id + ts + input_tokens + output_tokens + basic_micros + pay_go_micros) from usage_event`.execute(database.db);
  await sql`select sum(length(totals)) from usage_running_total`.execute(database.db);
  console.log(`    (page cache warmed with one pass over usage_event, then usage_running_total, in ${fmt((performance.now() - warm) / 1000, 1)} s)`);
  // The import above ran in this process; its garbage is collected now (a service never holds it).
  (globalThis as { gc?: () => void }).gc?.();
  const runs = planWindows(members);
  await timeService(runs, handlers, call);
  // The reference scan's index: what a raw scan needs to be fast. Built only now, so that its writes
  // (~400 MB, and the system writing them back) stay out of the service's timings; dropped below.
  const t = performance.now();
  await sql`create index bench_raw_scan on usage_event (member_key, ts, model_id, input_tokens, output_tokens, basic_micros, pay_go_micros)`.execute(database.db);
  if (database.dialect === "postgres") await sql`analyze usage_event`.execute(database.db);
  console.log(`    (the reference scan's member-first covering index built in ${fmt((performance.now() - t) / 1000, 1)} s)`);
  try {
    await timeScans(database, runs);
  } finally {
    await sql`drop index bench_raw_scan`.execute(database.db);
  }
}

interface WindowRun {
  name: string;
  asked: Array<{ start: number; end: number; ids: string[] }>;
  service: number[];
  raw: number[];
  digests: string[];
}

/** The queries of each window (the same on every run): warm-up ones first. */
function planWindows(members: number): WindowRun[] {
  const yearEnd = YEAR_START + 365 * DAY;
  const windows: Array<[string, (rand: () => number) => [number, number]]> = [
    ["180 days", (rand) => { const s = YEAR_START + Math.floor(rand() * 180) * DAY + Math.floor(rand() * DAY); return [s, s + 180 * DAY]; }],
    ["30 days", (rand) => { const s = YEAR_START + Math.floor(rand() * 330) * DAY + Math.floor(rand() * DAY); return [s, s + 30 * DAY]; }],
    ["unaligned ~97 days", (rand) => { const s = YEAR_START + 17 + Math.floor(rand() * 200 * DAY); return [s, Math.min(yearEnd, s + 97 * DAY + 12_345)]; }],
  ];
  const queries = Number(flags.queries);
  return windows.map(([name, window]) => {
    const rand = random(11);
    const asked = Array.from({ length: WARM_UP_QUERIES + queries }, () => {
      const [start, end] = window(rand);
      const ids = new Set<string>();
      while (ids.size < 100) ids.add(memberId(Math.floor(rand() * members)));
      return { start, end, ids: [...ids] };
    });
    return { name, asked, service: [], raw: [], digests: [] };
  });
}

/**
 * Every window's service queries, back to back, keeping only a digest of each answer (the reference
 * scans run after all of them: interleaved, each raw scan's garbage and page-cache churn, ~100,000
 * events read through a 400 MB index, landed in the service's timings; answers kept whole would be
 * copied by every young-generation collection in the timed loop).
 */
async function timeService(runs: WindowRun[], handlers: UsageHandlers, call: QueryCall) {
  for (const run of runs) {
    for (const [q, asked] of run.asked.entries()) {
      const { ms, digest } = await timeQuery(handlers, call, asked);
      if (q >= WARM_UP_QUERIES) run.service.push(ms);
      run.digests.push(digest);
    }
  }
}

type UsageHandlers = ReturnType<typeof usageService>;
type QueryCall = Parameters<UsageHandlers["queryUserModelUsage"]>[1];

/**
 * One query through the handler: its time and its answer's digest. A function of its own so that the
 * answer dies with it, as a service's does once sent: a value awaited in the timing loop itself
 * stayed alive in the loop's suspended frame until the next query's await returned, and every
 * young-generation collection during that query copied the previous answer (~0.7 MB) too.
 */
async function timeQuery(handlers: UsageHandlers, call: QueryCall, { start, end, ids }: WindowRun["asked"][number]) {
  const request = create(QueryUserModelUsageRequestSchema, { startTime: BigInt(start), endTime: BigInt(end), userIds: ids });
  const t = performance.now();
  const answer = await handlers.queryUserModelUsage(request, call);
  const ms = performance.now() - t;
  const entries: Array<[string, string]> = [];
  for (const item of answer.items ?? []) {
    for (const m of item.modelUsage ?? []) {
      entries.push([`${item.userId}|${m.modelName}|${m.modelType}|${m.modelSource}`, `${m.usage!.inputTokens}/${m.usage!.outputTokens}/${m.amount!.basicAmount}/${m.amount!.payGoAmount}`]);
    }
  }
  return { ms, digest: digestOf(entries) };
}

/** The same queries by the reference scan; each answer must have the service's digest. */
async function timeScans(database: Database, runs: WindowRun[]) {
  for (const run of runs) {
    for (const [q, { start, end, ids }] of run.asked.entries()) {
      const t = performance.now();
      const scan = await rawScan(database, ids, start, end);
      if (q >= WARM_UP_QUERIES) run.raw.push(performance.now() - t);
      if (digestOf(scan) !== run.digests[q]) throw new Error(`query ${q} (${run.name}): the service's answer differs from the raw scan`);
    }
    const service = run.service.sort((a, b) => a - b);
    const raw = run.raw.sort((a, b) => a - b);
    const p50 = percentile(service, 50), p99 = percentile(service, 99), rawP50 = percentile(raw, 50), rawP99 = percentile(raw, 99);
    console.log(`    ${run.name.padEnd(20)} service p50 ${fmt(p50, 2)} ms, p99 ${fmt(p99, 2)} ms | raw scan p50 ${fmt(rawP50, 2)} ms, p99 ${fmt(rawP99, 2)} ms | ` +
      `${fmt(rawP50 / p50, 1)}x faster at p50; answers equal`);
  }
}

/** One answer as a hash: its (member, model) -> figures entries in key order. */
function digestOf(entries: Iterable<[string, string]>): string {
  const hash = createHash("sha256");
  for (const [key, value] of [...entries].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) hash.update(`${key}=${value}\n`);
  return hash.digest("hex");
}

/** The reference: every raw event in the window, summed per member and model, no rollup. */
async function rawScan(database: Database, userIds: string[], start: number, end: number): Promise<Map<string, string>> {
  const { rows } = await sql<{ user_id: string; model_name: string; model_type: string; model_source: string; i: string; o: string; b: string; p: string }>`
    select m.user_id, md.model_name, md.model_type, md.model_source,
      cast(sum(e.input_tokens) as text) as i, cast(sum(e.output_tokens) as text) as o,
      cast(sum(e.basic_micros) as text) as b, cast(sum(e.pay_go_micros) as text) as p
    from member m
    join usage_event e on e.member_key = m.member_key and e.ts >= ${start} and e.ts < ${end}
    join usage_model md on md.model_id = e.model_id
    where m.enterprise_id = ${ENTERPRISE_ID} and m.user_id in (${sql.join(userIds)})
    group by m.user_id, md.model_name, md.model_type, md.model_source`.execute(database.db);
  const micros = (v: string) => formatMicros(BigInt(v));
  return new Map(rows.map((r) => {
    const custom = r.model_source === "Custom";
    return [`${r.user_id}|${r.model_name}|${r.model_type}|${r.model_source}`, `${r.i}/${r.o}/${custom ? "0.000000" : micros(r.b)}/${custom ? "0.000000" : micros(r.p)}`];
  }));
}

/** The import, ingestion RPC and query figures on PostgreSQL, from a store of `events` imported the same way. */
async function postgresFigures(url: string, events: number, dir: string) {
  const pgShape = { ...shape, events };
  const database = openDatabase(url);
  try {
    await migrateToLatest(database);
    await sql`delete from usage_event where enterprise_id = ${ENTERPRISE_ID}`.execute(database.db);
    await sql`delete from usage_running_total where member_key in (select member_key from member where enterprise_id = ${ENTERPRISE_ID})`.execute(database.db);
    await importDirectory(database, benchDirectory(pgShape));
    // An earlier run's rollups in this database would be added to: they start again empty.
    await new UsageRepository(database).rollups.restart(ENTERPRISE_ID);
    const file = join(dir, "pg-events.ndjson");
    await writeUsageFile(file, pgShape);
    const t = performance.now();
    const summary = await importUsage(new UsageRepository(database), ENTERPRISE_ID, file);
    const seconds = (performance.now() - t) / 1000;
    console.log(`PostgreSQL: import of ${fmt(summary.recorded)} events in ${fmt(seconds, 1)} s = ${fmt(summary.recorded / seconds)} events/s`);
    await sql`analyze`.execute(database.db);
  } finally {
    await database.close();
  }
  await measureIngestion("PostgreSQL: ingestion RPC", url);
  const queried = openDatabase(url);
  try {
    await measureQueries(queried, `PostgreSQL (${fmt(events)} events)`, pgShape.members);
  } finally {
    await queried.close();
  }
}

function sizeOf(dir: string, base: string): number {
  return readdirSync(dir).filter((f) => f.startsWith(base)).reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
}

async function waitForPort(port: number) {
  for (let i = 0; i < 200; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("the server did not start");
}

await main();
