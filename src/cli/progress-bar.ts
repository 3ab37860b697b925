// The progress bars of the long commands on a terminal (cli-progress): the import's (bytes read of
// the file, events so far, rate), the export's (local days done, rows so far, rate) and the usage
// rebuild's (events read of the enterprise's, rate). `format` shows the count so far as {count}.
import { SingleBar, Presets } from "cli-progress";
import type { Progress } from "../operations/progress.js";
import type { CliStream } from "./cli-io.js";

export const IMPORT_BAR = "importing [{bar}] {percentage}% | {count} events | {rate} events/s | eta {eta_formatted}";
export const EXPORT_BAR = "exporting [{bar}] {value}/{total} days | {count} rows | {rate} rows/s | eta {eta_formatted}";
export const REBUILD_BAR = "rebuilding [{bar}] {percentage}% | {value}/{total} events | {rate} events/s | eta {eta_formatted}";

export function progressBar(stream: CliStream, format: string): Progress {
  const shown = new SingleBar({ format, stream, hideCursor: true }, Presets.shades_classic);
  const started = Date.now();
  return {
    start: (total) => shown.start(total, 0, { count: 0, rate: 0 }),
    update: (done, count = done) => shown.update(done, { count, rate: Math.round(count / Math.max((Date.now() - started) / 1000, 0.001)) }),
    stop: () => shown.stop(),
  };
}
