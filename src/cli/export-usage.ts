// `export usage`: the export's rows as CSV or NDJSON; --out is renamed into place when complete, so a failed export leaves no partial file.
import { once } from "node:events";
import { constants, createWriteStream, type WriteStream } from "node:fs";
import { access, chmod, lstat, rename, rm, stat } from "node:fs/promises";
import { dirname } from "node:path";
import { Readable, type Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { UsageExportRowSchema } from "../../gen/enterprise_admin/v1/usage_pb.js";
import { invalidParameter } from "../domain/errors.js";
import { dateRangeWindow, zoneOrDefault } from "../domain/local-time.js";
import type { Progress } from "../operations/progress.js";
import { exportUsageRows } from "../operations/usage-export.js";
import { RECORD_FORMATS, recordEncoder, type RecordFormat } from "../rest/record-formats.js";
import type { Database } from "../storage/database.js";
import { DirectoryRepository } from "../storage/directory-repository.js";
import { UsageRepository } from "../storage/usage-repository.js";

export interface UsageExportOptions {
  enterprise: string;
  from: string;
  to: string;
  timeZone?: string;
  format: string;
  /** Absent: stdout. */
  out?: string;
}

export interface UsageExportSummary {
  enterprise_id: string;
  from: string;
  to: string;
  time_zone: string;
  rows: number;
  out: string;
}

/** Writes the rows to --out, else to `stdout`; `stop` (the process's SIGINT or SIGTERM) ends it early, --out not written. */
export async function exportUsageFile(database: Database, options: UsageExportOptions, stdout: Writable, progress?: Progress,
  stop?: AbortSignal): Promise<UsageExportSummary> {
  if (!(RECORD_FORMATS as readonly string[]).includes(options.format)) {
    throw invalidParameter(`--format: ${JSON.stringify(options.format)} is not one of ${RECORD_FORMATS.join(", ")}`);
  }
  const usage = new UsageRepository(database);
  const enterprise = await usage.settingsWithRollups(options.enterprise, "--enterprise");
  const timeZone = zoneOrDefault(options.timeZone, enterprise.time_zone, "--time-zone");
  const window = dateRangeWindow(options.from, options.to, timeZone, ["--from", "--to"]);

  const temporary = options.out === undefined ? undefined : `${options.out}.partial-${process.pid}`;
  const out: Writable = temporary === undefined ? stdout : await openNew(temporary, options.out!);
  const encoder = recordEncoder(UsageExportRowSchema, options.format as RecordFormat);
  const firstDay = Date.parse(options.from);
  let rows = 0;
  async function* text() {
    yield encoder.header;
    for await (const batch of exportUsageRows(usage, new DirectoryRepository(database.db),
      { enterpriseId: options.enterprise, currency: enterprise.currency, start: window.start, end: window.end, timeZone, layout: enterprise.layout,
        signal: stop })) {
      rows += batch.length;
      // Dates are YYYY-MM-DD: their distance as UTC dates is the number of local days between them.
      progress?.update(Math.round((Date.parse(batch[batch.length - 1]!.date) - firstDay) / 86_400_000) + 1, rows);
      yield encoder.encode(batch);
    }
  }
  progress?.start(window.days);
  try {
    await pipeline(Readable.from(text(), { objectMode: false }), out, { end: temporary !== undefined, signal: stop });
    if (temporary !== undefined) await rename(temporary, options.out!);
  } catch (error) {
    if (temporary !== undefined) await rm(temporary, { force: true });
    if (stop?.aborted) throw new Error(`stopped by ${String(stop.reason)} after ${rows} rows: ${options.out === undefined ? "the output is incomplete" : `${options.out} was not written`}`);
    throw error;
  } finally {
    progress?.stop();
  }
  return { enterprise_id: options.enterprise, from: options.from, to: options.to, time_zone: timeZone, rows, out: options.out ?? "-" };
}

/**
 * A new file, opened before any work starts, or a one-line error naming --out. The export is renamed over `named` when done, so `named`
 * must be new or a regular file this process may write: a rename would replace a device, a link or a read-only file. Over an existing
 * file, the new one has its permission bits (not its owner or group: those of whoever runs the export).
 */
async function openNew(path: string, named: string): Promise<WriteStream> {
  if (named === "") throw invalidParameter("--out: an empty name is no file: name one, or leave --out out to write to stdout");
  const isDirectory = async (at: string) => (await stat(at).catch(() => undefined))?.isDirectory() ?? false;
  if (await isDirectory(named)) throw invalidParameter(`--out: cannot write ${named}: it is a directory`);
  const existing = await lstat(named).catch(() => undefined);
  if (existing && !existing.isFile()) throw invalidParameter(`--out: cannot write ${named}: it is not a regular file (a device, a link or a pipe); name a new file`);
  if (existing && !(await access(named, constants.W_OK).then(() => true, () => false))) {
    throw invalidParameter(`--out: cannot write ${named}: permission denied`);
  }
  // Made with the existing file's permission bits (the umask may take some away; chmod gives them back): never readable by more.
  const mode = existing ? existing.mode & 0o7777 : 0o666;
  const file = createWriteStream(path, { flags: "wx", mode });
  try {
    await once(file, "open");
  } catch (failure) {
    const error = failure as NodeJS.ErrnoException;
    // ENOENT also comes from a directory that holds no new files (/proc).
    const reason = error.code === "ENOENT" ? (await isDirectory(dirname(named)) ? "its directory takes no new file" : "its directory does not exist")
      : error.code === "EACCES" ? (existing ? "permission denied in its directory (the export is written beside it, then renamed over it)" : "permission denied")
      : error.code === "EEXIST" ? `${path} exists (another export to the same file running?)` : error.code ?? error.message;
    throw invalidParameter(`--out: cannot write ${named}: ${reason}`);
  }
  if (existing) {
    // Renamed over `named`, the export keeps its permission bits: a finance file kept 0600 must not become readable by everyone.
    await chmod(path, mode).catch(async (error: unknown) => {
      file.destroy();
      await rm(path, { force: true });
      throw error;
    });
  }
  return file;
}
