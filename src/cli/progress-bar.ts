// The import's progress bar on a terminal (cli-progress): bytes read of the file, events so far, rate.
import { SingleBar, Presets } from "cli-progress";
import type { ImportProgress } from "../operations/import-usage.js";

export function progressBar(): ImportProgress {
  const bar = new SingleBar({
    format: "importing [{bar}] {percentage}% | {events} events | {rate} events/s | eta {eta_formatted}",
    stream: process.stderr,
    hideCursor: true,
  }, Presets.shades_classic);
  const started = Date.now();
  return {
    start: (totalBytes) => bar.start(totalBytes, 0, { events: 0, rate: 0 }),
    update: (bytesRead, events) => {
      const seconds = Math.max((Date.now() - started) / 1000, 0.001);
      bar.update(bytesRead, { events, rate: Math.round(events / seconds) });
    },
    stop: () => bar.stop(),
  };
}
