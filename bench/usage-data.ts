// Synthetic usage data for benchmarks: a directory of N members and an NDJSON file of usage events
// over one year, in time order, with realistic bursts (work hours, weekdays, a few heavy users).
import { createWriteStream, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { sql } from "kysely";
import type { DirectoryFile } from "../src/domain/directory-file.js";
import { formatMicros } from "../src/domain/money.js";
import { importDirectory } from "../src/operations/import-directory.js";
import { importUsage } from "../src/operations/import-usage.js";
import { migrateToLatest, type Database } from "../src/storage/database.js";
import { UsageRepository } from "../src/storage/usage-repository.js";

export const YEAR_START = 1_735_689_600; // 2025-01-01T00:00:00Z

export interface UsageDataShape {
  enterpriseId: string;
  members: number;
  models: number;
  events: number;
  seed?: number;
  /** The enterprise's time zone (the directory file's; default UTC). */
  timeZone?: string;
  /** The days the events span from YEAR_START (default 365). */
  days?: number;
}

export function benchDirectory(shape: UsageDataShape): DirectoryFile {
  const departments = [{ department_id: "1", parent_department_id: "0", name: "Bench Corp" }];
  for (let d = 0; d < 50; d++) departments.push({ department_id: `d${d}`, parent_department_id: "1", name: `Team ${d}` });
  return {
    enterprise: { enterprise_id: shape.enterpriseId, name: "Bench Corp", currency: "USD", ...(shape.timeZone ? { time_zone: shape.timeZone } : {}) },
    departments,
    members: Array.from({ length: shape.members }, (_, i) => ({
      user_id: memberId(i), email: `user${i}@bench.example`, account_type: (i % 7 === 0 ? 2 : 1) as 1 | 2, department_ids: [`d${i % 50}`],
    })),
  };
}

export const memberId = (i: number) => String(100_000 + i);

export function modelOf(m: number) {
  const custom = m % 5 === 4;
  return { name: `model-${String.fromCharCode(97 + (m % 26))}${m}`, type: m % 3 === 0 ? "CUE" : "Chat", source: custom ? "Custom" : "Builtin" };
}

/** A small deterministic PRNG (mulberry32): the same seed gives the same file. */
export function random(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Event timestamps in order over the year (or `days`): weekdays and work hours carry most of the load. */
export async function writeUsageFile(path: string, shape: UsageDataShape): Promise<void> {
  const rand = random(shape.seed ?? 42);
  const out = createWriteStream(path, { highWaterMark: 1 << 22 });
  // The bursts below average (5 * 1.4 + 2 * 0.4) / 7 * (10 * 1.8 + 14 * 0.5) / 24 = 1.16: divide it out
  // so that the events fill the whole year.
  const meanIntensity = ((5 * 1.4 + 2 * 0.4) / 7) * ((10 * 1.8 + 14 * 0.5) / 24);
  const span = (shape.days ?? 365) * 86400;
  const perSecond = shape.events / span / meanIntensity;
  let ts = YEAR_START;
  let buffer = "";
  for (let i = 0; i < shape.events; i++) {
    const hour = Math.floor(ts / 3600) % 24;
    const weekday = (Math.floor(ts / 86400) + 3) % 7 < 5;
    const intensity = (weekday ? 1.4 : 0.4) * (hour >= 1 && hour <= 10 ? 1.8 : 0.5);
    ts += Math.max(0, Math.round(-Math.log(1 - rand()) / (perSecond * intensity)));
    if (ts >= YEAR_START + span) ts = YEAR_START + span - 1;
    // A fifth of the members make half the events.
    const member = rand() < 0.5 ? Math.floor(rand() * shape.members / 5) : Math.floor(rand() * shape.members);
    const m = Math.floor(Math.pow(rand(), 2) * shape.models);
    const model = modelOf(m);
    const input = 200 + Math.floor(rand() * 8000);
    const output = 50 + Math.floor(rand() * 2000);
    const charged = model.source === "Builtin";
    const basic = charged && rand() < 0.7 ? formatMicros(BigInt(input * 3)) : "0";
    const payGo = charged && basic === "0" ? formatMicros(BigInt(input * 5 + output * 15)) : "0";
    buffer += `{"event_id":"e${i}","user_id":"${memberId(member)}","model_name":"${model.name}","model_type":"${model.type}","model_source":"${model.source}","timestamp":${ts},"input_tokens":${input},"output_tokens":${output},"basic_amount":"${basic}","pay_go_amount":"${payGo}"}\n`;
    if (buffer.length > 1 << 20) {
      if (!out.write(buffer)) await new Promise<void>((resolve) => out.once("drain", () => resolve()));
      buffer = "";
    }
  }
  out.write(buffer);
  await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
  // On disk before it is imported, as a file to import would be: otherwise the kernel writes its
  // 2 GB back during the timed import (and the import's own commit waits behind that writeback).
  const written = await open(path, "r+");
  try {
    await written.sync();
  } finally {
    await written.close();
  }
}

/**
 * The store a benchmark reads, in `database` (migrated): with `reuse`, the one already there; else
 * the shape's directory and events (an NDJSON file in `dir`, imported by `importUsage`, the code of
 * `import usage`). Prints which, and how long the making took.
 */
export async function prepareBenchStore(database: Database, shape: UsageDataShape, dir: string, reuse: boolean): Promise<void> {
  await migrateToLatest(database);
  if (reuse) {
    console.log("store: reusing the one in --db");
    return;
  }
  await importDirectory(database, benchDirectory(shape));
  const file = join(dir, "events.ndjson");
  const t = performance.now();
  await writeUsageFile(file, shape);
  const imported = await importUsage(new UsageRepository(database), shape.enterpriseId, file);
  rmSync(file);
  if (database.dialect === "postgres") await sql`analyze`.execute(database.db);
  console.log(`store: ${imported.recorded.toLocaleString("en")} events, ${shape.members} members, ${shape.models} models over one year, ` +
    `enterprise zone ${shape.timeZone ?? "UTC"}, ${database.dialect} (made in ${((performance.now() - t) / 1000).toFixed(1)} s)`);
}
