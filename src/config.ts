// One typed configuration from flags and environment: flag, else environment variable, else default.
import { DEFAULT_RATE_LIMITS, type RateLimitSettings } from "./domain/rate-limits.js";
import { DEFAULT_DATABASE_URL } from "./storage/database.js";

export interface Config {
  port: number;
  host: string;
  databaseUrl: string;
  logLevel: string;
}

/** What `serve` needs besides: read only there, so a bad limit never stops an operator's other commands. */
export interface ServeConfig extends Config {
  rateLimits: RateLimitSettings;
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

export function loadServeConfig(flags: { port?: string; host?: string; db?: string } = {}, env = process.env): ServeConfig {
  return { ...loadConfig(flags, env), rateLimits: loadRateLimits(env) };
}

/** RATE_LIMIT_RPS, RATE_LIMIT_BURST, TOKEN_EXCHANGE_LIMIT_PER_APP_ID, TOKEN_EXCHANGE_LIMIT_PER_ADDRESS; 0 turns one off. */
function loadRateLimits(env: NodeJS.ProcessEnv): RateLimitSettings {
  const read = (name: string, fallback: number, integer: boolean) => {
    const text = env[name];
    if (text === undefined || text.trim() === "") return fallback;
    const value = Number(text);
    if (!Number.isFinite(value) || value < 0 || (integer && !Number.isInteger(value))) {
      throw new Error(`${name}: "${text}" is not ${integer ? "a whole number" : "a number"} >= 0 (0 turns the limit off)`);
    }
    return value;
  };
  return {
    callsPerSecond: read("RATE_LIMIT_RPS", DEFAULT_RATE_LIMITS.callsPerSecond, false),
    callBurst: read("RATE_LIMIT_BURST", DEFAULT_RATE_LIMITS.callBurst, true),
    exchangesPerMinutePerAppId: read("TOKEN_EXCHANGE_LIMIT_PER_APP_ID", DEFAULT_RATE_LIMITS.exchangesPerMinutePerAppId, true),
    exchangesPerMinutePerAddress: read("TOKEN_EXCHANGE_LIMIT_PER_ADDRESS", DEFAULT_RATE_LIMITS.exchangesPerMinutePerAddress, true),
  };
}
