// One typed configuration from flags and environment: flag, else environment variable, else default.
import { DEFAULT_DATABASE_URL } from "./storage/database.js";
import { DEFAULT_TUNING, type UsageFileTuning } from "./operations/usage-file-worker.js";

export interface Config {
  port: number;
  host: string;
  databaseUrl: string;
  logLevel: string;
}

export function loadConfig(flags: { port?: string; host?: string; db?: string } = {}, env = process.env): Config {
  const portText = flags.port ?? env.PORT ?? "8080";
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port/PORT: "${portText}" is not a port number (0 to 65535)`);
  return {
    port,
    host: flags.host ?? env.HOST ?? "127.0.0.1",
    databaseUrl: flags.db ?? env.DATABASE_URL ?? DEFAULT_DATABASE_URL,
    logLevel: env.LOG_LEVEL ?? "info",
  };
}

/** `import usage`'s sizes: IMPORT_CHUNK_EVENTS (default 20,000) events a commit, at most. */
export function usageImportTuning(env = process.env): UsageFileTuning {
  const text = env.IMPORT_CHUNK_EVENTS;
  if (text === undefined || text === "") return DEFAULT_TUNING;
  const chunkEvents = Number(text);
  if (!Number.isInteger(chunkEvents) || chunkEvents < 1 || chunkEvents > 10_000_000) {
    throw new Error(`IMPORT_CHUNK_EVENTS: "${text}" is not a whole number of events from 1 to 10000000`);
  }
  return { ...DEFAULT_TUNING, chunkEvents, batchEvents: Math.min(DEFAULT_TUNING.batchEvents, chunkEvents) };
}
