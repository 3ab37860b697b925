// Structured JSON logs (pino). Authorization headers and credential fields are redacted at the source.
import { pino, type Logger } from "pino";

export type { Logger };

export function createLogger(options: { level?: string; destination?: NodeJS.WritableStream | number } = {}): Logger {
  const destination = options.destination ?? 1;
  return pino(
    {
      level: options.level ?? "info",
      base: { service: "enterprise-admin" },
      redact: { paths: ["authorization", "*.authorization", "app_secret", "*.app_secret", "access_token", "*.access_token"], censor: "[redacted]" },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    typeof destination === "number" ? pino.destination({ dest: destination, sync: false }) : destination,
  );
}

/**
 * Writes out every line logged so far, then calls `done` (a process about to exit). pino's flush(cb) calls back at once while a line is
 * still being written (sonic-boom's default minLength of 0), and the exit then wrote the later lines first (`stopped` before
 * `shutting down`): the destination is ended instead, and `done` runs once it has closed.
 */
export function endLog(logger: Logger, done: () => void): void {
  const destination = (logger as unknown as Record<symbol, NodeJS.WritableStream>)[pino.symbols.streamSym]!;
  const fallback = setTimeout(done, 2_000); // a destination that never closes must not keep the process from exiting
  destination.once("close", () => {
    clearTimeout(fallback);
    done();
  });
  destination.end();
}
