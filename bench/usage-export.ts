// Benchmark: the usage export at scale. Prints figures; it is not a test. `npm run bench:export`
// (options: --events N (default 1,000,000), --members (5,000), --models (20), --days of the window
// (180), --zone (the enterprise's time zone when the store is made: Asia/Kolkata), --time-zone (the export's: Asia/Kolkata; another
// zone's days are read raw), --format csv|ndjson, --db URL (a SQLite file, or postgres://…
// for a fresh database made on that server; default a temporary SQLite file), --keep (with --db FILE:
// reuse the store in it if it exists)).
//
// Makes a synthetic store (bench/usage-data.ts: one year of events, imported by the real
// `importUsage`), then exports the first --days local days through the code behind the RPC and the
// CLI (exportUsageRows and the CSV/NDJSON encoder), writing to a sink that discards the text.
// Prints rows/s, bytes/s, and resident memory: before the export, its peak during the export, and
// the peak after each tenth of it, and the heap still live after a full GC at each tenth (flat when
// memory does not grow with the window).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { parseArgs } from "node:util";
import { UsageExportRowSchema } from "../gen/enterprise_admin/v1/usage_pb.js";
import { dateRangeWindow } from "../src/domain/local-time.js";
import { exportUsageRows } from "../src/operations/usage-export.js";
import { recordEncoder, type RecordFormat } from "../src/rest/record-formats.js";
import { openDatabase } from "../src/storage/database.js";
import { DirectoryRepository } from "../src/storage/directory-repository.js";
import { UsageRepository } from "../src/storage/usage-repository.js";
import { benchDatabase } from "./bench-database.js";
import { prepareBenchStore, YEAR_START } from "./usage-data.js";

const { values: flags } = parseArgs({
  options: {
    events: { type: "string", default: "1000000" },
    members: { type: "string", default: "5000" },
    models: { type: "string", default: "20" },
    days: { type: "string", default: "180" },
    zone: { type: "string", default: "Asia/Kolkata" },
    "time-zone": { type: "string", default: "Asia/Kolkata" },
    format: { type: "string", default: "csv" },
    db: { type: "string" },
    keep: { type: "boolean", default: false },
  },
});
const ENTERPRISE_ID = "bench";
const shape = { enterpriseId: ENTERPRISE_ID, members: Number(flags.members), models: Number(flags.models), events: Number(flags.events),
  timeZone: flags.zone };
const timeZone = flags["time-zone"]!;
const format = flags.format as RecordFormat;
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;

const dir = mkdtempSync(join(tmpdir(), "eadmin-bench-export-"));
const target = await benchDatabase(flags.db, dir, "export", flags.keep);

const database = openDatabase(target.url);
try {
  await prepareBenchStore(database, shape, dir, target.reuse);
  const usage = new UsageRepository(database);
  // Days of the enterprise's own zone are read from the rollups' per-model member sums, other zones' days from the raw events.
  const { layout } = await usage.settingsWithRollups(ENTERPRISE_ID);

  // The window: --days local days from the store's first date.
  const firstDate = new Date(YEAR_START * 1000).toISOString().slice(0, 10);
  const lastDate = new Date((YEAR_START + (Number(flags.days) - 1) * 86_400) * 1000).toISOString().slice(0, 10);
  const { start, end } = dateRangeWindow(firstDate, lastDate, timeZone, ["--days", "--days"]);
  const encoder = recordEncoder(UsageExportRowSchema, format);
  let rows = 0;
  let bytes = 0;
  let peak = process.memoryUsage.rss();
  const before = peak;
  const tenths: number[] = [];
  const liveHeap: number[] = [];
  const gc = (globalThis as { gc?: () => void }).gc;
  const directory = new DirectoryRepository(database.db);
  async function* text() {
    yield encoder.header;
    for await (const batch of exportUsageRows(usage, directory, { enterpriseId: ENTERPRISE_ID, currency: "USD", start, end, timeZone, layout })) {
      rows += batch.length;
      peak = Math.max(peak, process.memoryUsage.rss());
      const done = Math.floor(((Date.parse(batch[batch.length - 1]!.date) / 1000 - start) / (end - start)) * 10);
      while (tenths.length < done) {
        tenths.push(peak);
        // The heap still live after a full collection: what the export holds, apart from garbage not yet collected.
        gc?.();
        liveHeap.push(process.memoryUsage().heapUsed);
      }
      yield encoder.encode(batch);
    }
  }
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      done();
    },
  });
  const t = performance.now();
  await pipeline(Readable.from(text(), { objectMode: false }), sink);
  const seconds = (performance.now() - t) / 1000;
  console.log(`export of ${flags.days} local days in ${timeZone} as ${format}: ${rows.toLocaleString("en")} rows, ${mb(bytes)} in ${seconds.toFixed(2)} s: ` +
    `${Math.round(rows / seconds).toLocaleString("en")} rows/s, ${mb(bytes / seconds)}/s`);
  console.log(`resident memory: ${mb(before)} before, peak ${mb(peak)} during; peak after each tenth: ${tenths.map(mb).join(", ")}`);
  if (gc) console.log(`live heap after a full GC at each tenth: ${liveHeap.map(mb).join(", ")} (the GCs are inside the timing above)`);
} finally {
  await database.close();
  await target.drop();
  rmSync(dir, { recursive: true, force: true });
}
