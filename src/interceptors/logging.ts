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
