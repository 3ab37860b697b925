// Benchmark: the usage report at scale. Prints figures; it is not a test. `npm run bench:report`
// (options: --events N (default 1,000,000), --members (5,000), --models (20), --queries per report (200),
// --zone (the enterprise's time zone: Asia/Kolkata (default) or UTC), --scans (how many of the timed
// reports are also computed by the raw scan and compared, with the two not counted; default 10; 0:
// none; at 10M events a scan takes seconds to tens of seconds),
// --db URL (a SQLite file, or postgres://… for a fresh database made on that server; default a
// temporary SQLite file), --keep (with --db FILE: reuse the store in it if it exists), --cases (which
// of the five below, e.g. "2" or "1,3"; default all)).
//
// Makes a synthetic store (bench/usage-data.ts: one year of events, imported by the real
// `importUsage`), then times five reports through the code behind the RPC (UsageReports.report),
// each beside the same answer computed by a plain SQL scan of the raw events, and checks the two
// answers are equal:
//   (1) 180 day buckets in Asia/Kolkata (+05:30), grouped by model, the whole enterprise;
//   (2) 180 day buckets in the enterprise's zone, grouped by department (the root's children);
//   (3) hour buckets over 31 days in the enterprise's zone, the whole enterprise;
//   (4) as (1) in the other of UTC and Asia/Kolkata: days of a zone not the enterprise's, read raw
//       by model (only the rollups' own days have per-model rows);
//   (5) 180 day buckets in the enterprise's zone, grouped by member and model: the first page (at
//       most 100 members: those whose figures fit in the service's bound, REPORT_MAX_FIGURES).
// Each case's reports run first on a UsageReports of their own, not counted, so that the timed ones
// run compiled code as a running server does; the case prints the first of those (the code not yet
// warm for it, no day in the report's day cache, operations/report-day-cache.ts). The timed reports
// start with an empty day cache too, and later ones mostly find the days earlier ones made. Each case
// also prints how many timed reports had a scavenge or mark-compact inside them, and the p99 and slowest of the others.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { constants, performance, PerformanceObserver } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { sql } from "kysely";
import { UsageReports, type UsageReportRequest } from "../src/operations/usage-report.js";
import { DepartmentRepository } from "../src/storage/department-repository.js";
import { openDatabase, type Database } from "../src/storage/database.js";
import { UsageRepository } from "../src/storage/usage-repository.js";
import { BASIC, EVENTS, INPUT, OUTPUT, PAY_GO } from "../src/domain/usage-totals.js";
import { benchDatabase } from "./bench-database.js";
import { prepareBenchStore, random, YEAR_START } from "./usage-data.js";

const { values: flags } = parseArgs({
  options: {
    events: { type: "string", default: "1000000" },
    members: { type: "string", default: "5000" },
    models: { type: "string", default: "20" },
    queries: { type: "string", default: "200" },
    scans: { type: "string" },
    db: { type: "string" },
    zone: { type: "string", default: "Asia/Kolkata" },
    keep: { type: "boolean", default: false },
    cases: { type: "string", default: "1,2,3,4,5" },
  },
});
const ENTERPRISE_ID = "bench";
const DAY = 86_400;
/** Asia/Kolkata has been +05:30 all year since 1945: its local day is a fixed shift of the UTC one. */
const KOLKATA_OFFSET = 5 * 3600 + 1800;
/**
 * Reports of each case run first on a UsageReports of their own (its own day cache), not counted: a
 * fresh process runs the report's code unoptimized until V8 has seen it run, which a running server
 * has long done. The timed reports' day cache still starts empty.
 */
const CODE_WARM_UP = 20;
/** Reports run before the timed ones on the timed UsageReports, not counted. */
const WARM_UP = 2;
if (flags.zone !== "UTC" && flags.zone !== "Asia/Kolkata") throw new Error("--zone: UTC or Asia/Kolkata");
/** The enterprise zone's offset, and the other zone's: both fixed all year. */
const OWN_OFFSET = flags.zone === "UTC" ? 0 : KOLKATA_OFFSET;
const OTHER_ZONE = flags.zone === "UTC" ? "Asia/Kolkata" : "UTC";
const OTHER_OFFSET = KOLKATA_OFFSET - OWN_OFFSET;
const shape = {
  enterpriseId: ENTERPRISE_ID, members: Number(flags.members), models: Number(flags.models), events: Number(flags.events), timeZone: flags.zone,
};
const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

/** A report's answer as "bucket start|group" -> "events/active/input/output/basic/pay_go", empty groups left out. */
type Answer = Map<string, string>;

interface ReportCase {
  name: string;
  request: (start: number) => Partial<UsageReportRequest> & { startTime: bigint; endTime: bigint };
  /** The window's first second for a day index of the year. */
  start: (day: number) => number;
  /** `pageMembers`: how many members the service's page showed, when grouped by member. */
  reference: (database: Database, start: number, end: number, pageMembers: number) => Promise<Answer>;
}

/** SQL: the start of the local day or hour (`unit` seconds) holding e.ts in a zone `offset` seconds east of UTC. */
const localStart = (unit: number, offset: number) =>
  sql`((e.ts + ${sql.lit(offset)}) / ${sql.lit(unit)}) * ${sql.lit(unit)} - ${sql.lit(offset)}`;
const MODEL_GROUP = sql`md.model_name || '|' || md.model_type || '|' || md.model_source`;
const MODEL_JOIN = sql`join usage_model md on md.model_id = e.model_id`;

const byModelIn = (name: string, zone: string, offset: number): ReportCase => ({
  name: `180 days by model, ${name}`,
  start: (day) => YEAR_START + day * DAY - offset,
  request: (start) => ({ startTime: BigInt(start), endTime: BigInt(start + 180 * DAY), timeZone: zone, bucket: "day", groupBy: ["model"] }),
  reference: (database, start) => scan(database, localStart(DAY, offset), MODEL_GROUP, MODEL_JOIN, start, start + 180 * DAY),
});

const CASES: ReportCase[] = [
  byModelIn("Asia/Kolkata", "Asia/Kolkata", KOLKATA_OFFSET),
  {
    name: "180 days by department, own zone",
    start: (day) => YEAR_START + day * DAY - OWN_OFFSET,
    request: (start) => ({ startTime: BigInt(start), endTime: BigInt(start + 180 * DAY), bucket: "day", groupBy: ["department"] }),
    reference: (database, start) => scan(database, localStart(DAY, OWN_OFFSET), sql`g.group_id`, sql`
      join member m on m.member_key = e.member_key
      join member_department md on md.enterprise_id = m.enterprise_id and md.user_id = m.user_id
      join subtree g on g.department_id = md.department_id`, start, start + 180 * DAY),
  },
  {
    name: "31 days by hour, own zone",
    start: (day) => YEAR_START + day * DAY - OWN_OFFSET,
    request: (start) => ({ startTime: BigInt(start), endTime: BigInt(start + 31 * DAY), bucket: "hour" }),
    reference: (database, start) => scan(database, localStart(3600, OWN_OFFSET), sql`''`, sql``, start, start + 31 * DAY),
  },
  byModelIn(`${OTHER_ZONE} (not the enterprise's zone)`, OTHER_ZONE, OTHER_OFFSET),
  {
    name: "180 days by member, model, own zone",
    start: (day) => YEAR_START + day * DAY - OWN_OFFSET,
    request: (start) => ({ startTime: BigInt(start), endTime: BigInt(start + 180 * DAY), bucket: "day", groupBy: ["member", "model"] }),
    // The first page: the window's first members with usage, by user_id in code point order, as many as fit in the server's bound on figures.
    reference: (database, start, _end, pageMembers) => scan(database, localStart(DAY, OWN_OFFSET), sql`m.user_id || '|' || ${MODEL_GROUP}`, sql`${MODEL_JOIN}
      join member m on m.member_key = e.member_key
      join (select member_key from member where enterprise_id = ${ENTERPRISE_ID} and member_key in (select distinct member_key from usage_event
        where enterprise_id = ${ENTERPRISE_ID} and ts >= ${start} and ts < ${start + 180 * DAY})
        order by user_id ${database.dialect === "postgres" ? sql`collate "C"` : sql``} limit ${pageMembers}) page on page.member_key = e.member_key`,
    start, start + 180 * DAY),
  },
];

/**
 * The reference (its constants are literals: a bound JavaScript number is a float to SQLite, and
 * would make the bucket arithmetic fractional): the raw events of [start, end) summed per (bucket, group) by the database, with
 * distinct members counted by it; a department group is a child of the root with its whole subtree.
 */
async function scan(database: Database, bucketStart: ReturnType<typeof sql>, group: ReturnType<typeof sql>, joins: ReturnType<typeof sql>,
  start: number, end: number): Promise<Answer> {
  const { rows } = await sql<{ b: number | string; g: string; n: string; a: string; i: string; o: string; bm: string; p: string }>`
    with recursive subtree(department_id, group_id) as (
      select department_id, department_id from department where enterprise_id = ${ENTERPRISE_ID} and parent_department_id = '1'
      union all
      select d.department_id, s.group_id from department d join subtree s on d.parent_department_id = s.department_id
        where d.enterprise_id = ${ENTERPRISE_ID})
    select ${bucketStart} as b, ${group} as g, cast(count(*) as text) as n, cast(count(distinct e.member_key) as text) as a,
      cast(sum(e.input_tokens) as text) as i, cast(sum(e.output_tokens) as text) as o,
      cast(sum(e.basic_micros) as text) as bm, cast(sum(e.pay_go_micros) as text) as p
    from usage_event e ${joins}
    where e.enterprise_id = ${ENTERPRISE_ID} and e.ts >= ${start} and e.ts < ${end}
    group by 1, 2`.execute(database.db);
  return new Map(rows.map((r) => [`${Number(r.b)}|${r.g}`, `${r.n}/${r.a}/${r.i}/${r.o}/${r.bm}/${r.p}`]));
}

/**
 * One report through UsageReports (what the RPC runs), its time, and as an Answer when `compared` (a raw scan checks it): made for every
 * report, the answers' strings would be garbage of the benchmark's own, collected inside later reports' times.
 */
async function timeReport(reports: UsageReports, request: UsageReportRequest, compared: boolean): Promise<{ ms: number; answer?: Answer; pageMembers?: number }> {
  const t = performance.now();
  const report = await reports.report(ENTERPRISE_ID, request, new AbortController().signal);
  const ms = performance.now() - t;
  if (!compared) return { ms };
  const answer: Answer = new Map();
  const pageMembers = new Set<string>();
  for (const bucket of report.buckets) {
    for (const g of bucket.groups) {
      const { sums, row, activeMembers } = g.figures;
      if (sums.exact(row, EVENTS) === 0) continue;
      const { userId, modelName, modelType, modelSource, departmentId } = g.label;
      pageMembers.add(userId);
      const key = modelName !== "" ? `${userId === "" ? "" : `${userId}|`}${modelName}|${modelType}|${modelSource}` : departmentId;
      const [input, output, basic, payGo, events] = [INPUT, OUTPUT, BASIC, PAY_GO, EVENTS].map((i) => sums.exact(row, i));
      answer.set(`${bucket.start}|${key}`, `${events}/${activeMembers}/${input}/${output}/${basic}/${payGo}`);
    }
  }
  return { ms, answer, pageMembers: pageMembers.size };
}

/** The first entry where two answers differ, or undefined when they are equal. */
function firstDifference(service: Answer, scan: Answer): string | undefined {
  for (const key of [...new Set([...service.keys(), ...scan.keys()])].sort()) {
    if (service.get(key) !== scan.get(key)) return `${key}: service ${service.get(key) ?? "none"}, raw scan ${scan.get(key) ?? "none"}`;
  }
  return undefined;
}

/** The process's scavenges and mark-compacts (not incremental marking steps) as they end: start (performance.now()) and duration, in ms. */
function watchCollections(): Array<{ start: number; ms: number }> {
  const collections: Array<{ start: number; ms: number }> = [];
  const counted = new Set([constants.NODE_PERFORMANCE_GC_MINOR, constants.NODE_PERFORMANCE_GC_MAJOR]);
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const { kind } = (entry as unknown as { detail: { kind: number } }).detail; // @types/node types `detail` on marks and measures only
      if (counted.has(kind)) collections.push({ start: entry.startTime, ms: entry.duration });
    }
  }).observe({ entryTypes: ["gc"] });
  return collections;
}

const chosenCases = flags.cases.split(",").map((n) => {
  const c = CASES[Number(n) - 1];
  if (!c) throw new Error(`--cases: ${JSON.stringify(n)} is not one of 1 to ${CASES.length}`);
  return c;
});

async function timeCases(database: Database) {
  const usage = new UsageRepository(database);
  const queries = Number(flags.queries);
  const scans = Math.min(queries, Number(flags.scans ?? 10));
  const collections = watchCollections();
  for (const c of chosenCases) {
    const requestAt = (start: number): UsageReportRequest =>
      ({ timeZone: "", bucket: "", groupBy: [], departmentId: "", userIds: [], emails: [], pageSize: 0, pageToken: "", ...c.request(start) });
    const warmRand = random(7);
    const warm = new UsageReports(usage, new DepartmentRepository(database.db));
    let first = 0;
    for (let q = 0; q < CODE_WARM_UP; q++) {
      const { ms } = await timeReport(warm, requestAt(c.start(Math.floor(warmRand() * 180))), false);
      if (q === 0) first = ms;
    }
    const reports = new UsageReports(usage, new DepartmentRepository(database.db));
    const rand = random(5);
    const starts = Array.from({ length: WARM_UP + queries }, () => c.start(Math.floor(rand() * 180)));
    const service: number[] = [];
    const answers: Array<{ answer: Answer; pageMembers: number }> = [];
    const spans: Array<{ from: number; ms: number }> = [];
    for (const [q, start] of starts.entries()) {
      const from = performance.now();
      // Kept only for the reports a raw scan checks: kept answers grow the old heap that later reports collect.
      const { ms, answer, pageMembers } = await timeReport(reports, requestAt(start), q < WARM_UP + scans);
      if (q >= WARM_UP) {
        service.push(ms);
        spans.push({ from, ms });
      }
      if (answer) answers.push({ answer, pageMembers: pageMembers! });
    }
    const raw: number[] = [];
    for (const [q, start] of starts.slice(0, scans === 0 ? 0 : WARM_UP + scans).entries()) {
      const request = c.request(start);
      const t = performance.now();
      const answer = await c.reference(database, start, Number(request.endTime), answers[q]!.pageMembers);
      if (q >= WARM_UP) raw.push(performance.now() - t);
      const difference = firstDifference(answers[q]!.answer, answer);
      if (difference) throw new Error(`${c.name}, report ${q}: the service's answer differs from the raw scan at ${difference}`);
    }
    // The observer hears of a collection a moment after it ends.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const withCollection = spans.filter(({ from, ms }) => collections.some((gc) => gc.start >= from && gc.start < from + ms));
    const without = spans.filter((span) => !withCollection.includes(span)).map((span) => span.ms).sort((a, b) => a - b);
    service.sort((a, b) => a - b);
    raw.sort((a, b) => a - b);
    console.log(`  ${c.name.padEnd(34)} service p50 ${fmt(percentile(service, 50), 1)} ms, p99 ${fmt(percentile(service, 99), 1)} ms, ` +
      `slowest ${fmt(service[service.length - 1]!, 1)} ms, first ${fmt(first, 1)} ms | ` +
      (scans === 0 ? "no raw scan" : `raw scan p50 ${fmt(percentile(raw, 50), 1)} ms, p99 ${fmt(percentile(raw, 99), 1)} ms (${scans} scans) | ` +
        `${scans + WARM_UP} answers equal`));
    console.log(`  ${"".padEnd(34)} a scavenge or mark-compact inside ${withCollection.length} of ${spans.length} timed reports; ` +
      (without.length === 0 ? "none without one" : `those without one: p99 ${fmt(percentile(without, 99), 1)} ms, slowest ${fmt(without[without.length - 1]!, 1)} ms`));
  }
}

const dir = mkdtempSync(join(tmpdir(), "eadmin-bench-report-"));
const target = await benchDatabase(flags.db, dir, "report", flags.keep);

const database = openDatabase(target.url);
try {
  await prepareBenchStore(database, shape, dir, target.reuse);
  console.log(`usage report, ${flags.queries} reports each (after ${CODE_WARM_UP} on a day cache of their own and ${WARM_UP} on the timed one, ` +
    "not counted), windows starting on random days of the year's first half:");
  await timeCases(database);
} finally {
  await database.close();
  await target.drop();
  rmSync(dir, { recursive: true, force: true });
}
