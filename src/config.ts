// One typed configuration from flags and environment: flag, else environment variable, else default.
import { DEFAULT_DATABASE_URL } from "./storage/database.js";

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
