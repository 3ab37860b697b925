// The progress bars of the long commands on a terminal (cli-progress): the import's (bytes read of
// the file, events so far, rate), the export's (local days done, rows so far, rate) and the usage
// rebuild's (events read of the enterprise's, rate).
import { SingleBar, Presets } from "cli-progress";
import type { ImportProgress } from "../operations/import-usage.js";
import type { RebuildProgress } from "../operations/rebuild-usage.js";
import type { CliStream } from "./cli-io.js";
import type { ExportProgress } from "./export-usage.js";

function bar(format: string, stream: CliStream): SingleBar {
  return new SingleBar({ format, stream, hideCursor: true }, Presets.shades_classic);
}

const perSecond = (count: number, started: number) => Math.round(count / Math.max((Date.now() - started) / 1000, 0.001));

export function progressBar(stream: CliStream): ImportProgress {
  const shown = bar("importing [{bar}] {percentage}% | {events} events | {rate} events/s | eta {eta_formatted}", stream);
  const started = Date.now();
  return {
    start: (totalBytes) => shown.start(totalBytes, 0, { events: 0, rate: 0 }),
    update: (bytesRead, events) => shown.update(bytesRead, { events, rate: perSecond(events, started) }),
    stop: () => shown.stop(),
  };
}

export function exportProgressBar(stream: CliStream): ExportProgress {
  const shown = bar("exporting [{bar}] {value}/{total} days | {rows} rows | {rate} rows/s | eta {eta_formatted}", stream);
  const started = Date.now();
  return {
    start: (totalDays) => shown.start(totalDays, 0, { rows: 0, rate: 0 }),
    update: (daysDone, rows) => shown.update(daysDone, { rows, rate: perSecond(rows, started) }),
    stop: () => shown.stop(),
  };
}

export function rebuildProgressBar(stream: CliStream): RebuildProgress {
  const shown = bar("rebuilding [{bar}] {percentage}% | {value}/{total} events | {rate} events/s | eta {eta_formatted}", stream);
  const started = Date.now();
  return {
    start: (totalEvents) => shown.start(totalEvents, 0, { rate: 0 }),
    update: (events) => shown.update(events, { rate: perSecond(events, started) }),
    stop: () => shown.stop(),
  };
}
