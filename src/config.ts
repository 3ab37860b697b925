// One typed configuration from flags and environment: flag, else environment variable, else default.
import { DEFAULT_RATE_LIMITS, type RateLimitSettings } from "./domain/rate-limits.js";
import { DEFAULT_REPORT_LIMITS, MIN_REPORT_MAX_FIGURES, type ReportLimits } from "./domain/report-limits.js";
import { BadSetting, envNumber } from "./env-number.js";
import { DEFAULT_DATABASE_URL } from "./storage/database.js";
import { DEFAULT_TUNING, type UsageFileTuning } from "./operations/usage-file-worker.js";

export interface Config {
  port: number;
  host: string;
  databaseUrl: string;
}

/** What `serve` needs besides: read only there, so a bad limit never stops an operator's other commands. */
export interface ServeConfig extends Config {
  logLevel: string;
  rateLimits: RateLimitSettings;
  limits: ServerLimits;
  metrics: MetricsAccess;
  /** The browser origins allowed to call the API from their pages (CORS); empty: CORS is off. */
  corsAllowedOrigins: readonly string[];
  /** REPORT_MAX_FIGURES and REPORT_MAX_RUNNING. */
  reportLimits: ReportLimits;
}

/** Who may read `GET /metrics`: nobody (404), anyone who reaches the port, or a bearer of METRICS_TOKEN. */
export type MetricsAccess = { mode: "off" } | { mode: "open" } | { mode: "token"; token: string };

/** The shortest METRICS_TOKEN accepted: a guessable token is no protection. */
export const METRICS_TOKEN_MIN_LENGTH = 16;

/** How long connections and calls may last, and how much one client may hold (docs/operations.md). */
export interface ServerLimits {
  /** An HTTP/1.1 request's headers must be complete this long after the connection's first byte. */
  headersTimeoutMs: number;
  /** An HTTP/1.1 keep-alive connection with no request in progress is closed after this. */
  keepAliveTimeoutMs: number;
  /** An HTTP/2 session with no open stream (or a connection that sends nothing) is closed after this. */
  idleTimeoutMs: number;
  /** The longest a call may run, body included, when its caller sets no shorter deadline. */
  requestTimeoutMs: number;
  /** Connections open at once; more are closed as they arrive. */
  maxConnections: number;
  /** HTTP/2 streams open at once on one session (SETTINGS_MAX_CONCURRENT_STREAMS). */
  http2MaxConcurrentStreams: number;
  /** Streams a client may reset on one session in 10 s before it gets GOAWAY (ENHANCE_YOUR_CALM). */
  http2MaxResetsPer10s: number;
  /** After such a GOAWAY, how long new connections from the client's address are refused. */
  abuseCooldownMs: number;
  /** On SIGTERM/SIGINT, how long in-flight calls may take to finish before connections are closed. */
  shutdownGraceMs: number;
}

export const DEFAULT_LIMITS: Readonly<ServerLimits> = Object.freeze({
  headersTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  idleTimeoutMs: 60_000,
  requestTimeoutMs: 60_000,
  maxConnections: 1_000,
  http2MaxConcurrentStreams: 100,
  http2MaxResetsPer10s: 200,
  abuseCooldownMs: 30_000,
  shutdownGraceMs: 10_000,
});

const MAX_LIMIT = 2 ** 31 - 1;

/** The environment variable of each limit. */
const LIMIT_VARIABLES: Record<keyof ServerLimits, string> = {
  headersTimeoutMs: "HEADERS_TIMEOUT_MS",
  keepAliveTimeoutMs: "KEEP_ALIVE_TIMEOUT_MS",
  idleTimeoutMs: "IDLE_TIMEOUT_MS",
  requestTimeoutMs: "REQUEST_TIMEOUT_MS",
  maxConnections: "MAX_CONNECTIONS",
  http2MaxConcurrentStreams: "HTTP2_MAX_CONCURRENT_STREAMS",
  http2MaxResetsPer10s: "HTTP2_MAX_RESETS_PER_10S",
  abuseCooldownMs: "ABUSE_COOLDOWN_MS",
  shutdownGraceMs: "SHUTDOWN_GRACE_MS",
};

/** pino's levels, least to most: what LOG_LEVEL takes. */
const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal", "silent"];

export function loadConfig(flags: { port?: string; host?: string; db?: string } = {}, env: NodeJS.ProcessEnv = process.env): Config {
  const portText = setting(flags.port, "--port", env.PORT) ?? "8080";
  const port = /^\d+$/.test(portText.trim()) ? Number(portText) : NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new BadSetting(`--port/PORT: "${portText}" is not a port number (0 to 65535)`);
  return {
    port,
    // An empty HOST is unset, as every variable: it must not bind every interface (Node's "" is the wildcard).
    host: setting(flags.host, "--host", env.HOST) ?? "127.0.0.1",
    databaseUrl: setting(flags.db, "--db", env.DATABASE_URL) ?? DEFAULT_DATABASE_URL,
  };
}

/**
 * A flag, else its variable; undefined when neither is set. An empty variable is unset (shells and .env files leave them so); an
 * empty flag is refused: `--db "$DB"` with DB unset must not quietly use the default store.
 */
function setting(flag: string | undefined, name: string, variable: string | undefined): string | undefined {
  if (flag !== undefined) {
    if (flag.trim() === "") throw new BadSetting(`${name}: empty; give a value or leave the option out`);
    return flag;
  }
  return variable === undefined || variable.trim() === "" ? undefined : variable;
}

export function loadServeConfig(flags: { port?: string; host?: string; db?: string } = {}, env = process.env): ServeConfig {
  const logLevel = setting(undefined, "LOG_LEVEL", env.LOG_LEVEL) ?? "info";
  if (!LOG_LEVELS.includes(logLevel)) throw new BadSetting(`LOG_LEVEL: ${JSON.stringify(logLevel)} is not a level (${LOG_LEVELS.join(", ")})`);
  return { ...loadConfig(flags, env), logLevel, rateLimits: loadRateLimits(env), limits: loadLimits(env), metrics: loadMetricsAccess(env),
    corsAllowedOrigins: loadCorsAllowedOrigins(env),
    reportLimits: {
      maxFigures: envNumber(env, "REPORT_MAX_FIGURES", { fallback: DEFAULT_REPORT_LIMITS.maxFigures, min: MIN_REPORT_MAX_FIGURES }),
      maxRunning: envNumber(env, "REPORT_MAX_RUNNING", { fallback: DEFAULT_REPORT_LIMITS.maxRunning, min: 1, max: 1000 }),
    } };
}

/**
 * METRICS (off, open or token) and METRICS_TOKEN. Unset METRICS means token when METRICS_TOKEN is
 * set, else open. The token's value never appears in a message.
 */
export function loadMetricsAccess(env: NodeJS.ProcessEnv): MetricsAccess {
  const token = env.METRICS_TOKEN ?? "";
  const mode = (env.METRICS ?? "").trim() || (token === "" ? "open" : "token");
  if (mode === "off" || mode === "open") return { mode };
  if (mode !== "token") throw new BadSetting(`METRICS: "${mode}" is not one of off, open, token`);
  if (token.length < METRICS_TOKEN_MIN_LENGTH || /[^\x21-\x7e]/.test(token)) {
    throw new BadSetting(`METRICS_TOKEN: METRICS=token needs a token of at least ${METRICS_TOKEN_MIN_LENGTH} printable characters without spaces`);
  }
  return { mode, token };
}

/**
 * CORS_ALLOWED_ORIGINS: comma-separated origins, each `scheme://host[:port]` exactly as a browser
 * sends it in `Origin`. `*` is refused: every caller sends a bearer token, and which web apps may use
 * one is the operator's choice, origin by origin.
 */
export function loadCorsAllowedOrigins(env: NodeJS.ProcessEnv): string[] {
  const text = env.CORS_ALLOWED_ORIGINS ?? "";
  const origins: string[] = [];
  for (const item of text.split(",").map((part) => part.trim()).filter((part) => part !== "")) {
    if (item === "*") throw new BadSetting("CORS_ALLOWED_ORIGINS: \"*\" is not accepted; list each origin allowed, e.g. https://admin.example.com");
    const origin = browserOrigin(item);
    if (origin !== item) {
      const hint = origin === undefined ? "expected http(s)://host[:port], e.g. https://admin.example.com" : `a browser sends ${JSON.stringify(origin)}`;
      throw new BadSetting(`CORS_ALLOWED_ORIGINS: ${JSON.stringify(item)} is not an origin as browsers send it (no path, lower case, no default port): ${hint}`);
    }
    if (!origins.includes(origin)) origins.push(origin);
  }
  return origins;
}

/** The origin of an http(s) URL as browsers serialize it in `Origin` (no path, default port left out). */
function browserOrigin(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  return url.protocol === "http:" || url.protocol === "https:" ? url.origin : undefined;
}

/** RATE_LIMIT_RPS, RATE_LIMIT_BURST, TOKEN_EXCHANGE_LIMIT_PER_APP_ID, TOKEN_EXCHANGE_LIMIT_PER_ADDRESS; 0 turns one off. */
function loadRateLimits(env: NodeJS.ProcessEnv): RateLimitSettings {
  const note = "(0 turns the limit off)";
  return {
    callsPerSecond: envNumber(env, "RATE_LIMIT_RPS", { fallback: DEFAULT_RATE_LIMITS.callsPerSecond, min: 0, fraction: true, note }),
    callBurst: envNumber(env, "RATE_LIMIT_BURST", { fallback: DEFAULT_RATE_LIMITS.callBurst, min: 0, note }),
    exchangesPerMinutePerAppId: envNumber(env, "TOKEN_EXCHANGE_LIMIT_PER_APP_ID", { fallback: DEFAULT_RATE_LIMITS.exchangesPerMinutePerAppId, min: 0, note }),
    exchangesPerMinutePerAddress: envNumber(env, "TOKEN_EXCHANGE_LIMIT_PER_ADDRESS", { fallback: DEFAULT_RATE_LIMITS.exchangesPerMinutePerAddress, min: 0, note }),
  };
}

function loadLimits(env: NodeJS.ProcessEnv): ServerLimits {
  const limits = { ...DEFAULT_LIMITS };
  for (const [key, name] of Object.entries(LIMIT_VARIABLES) as [keyof ServerLimits, string][]) {
    // At most 2^31 - 1: the longest timer Node keeps (past it, 1 ms), PostgreSQL's largest statement_timeout, a valid HTTP/2 setting.
    limits[key] = envNumber(env, name, { fallback: DEFAULT_LIMITS[key], min: 1, max: MAX_LIMIT });
  }
  return limits;
}

/** `import usage`'s sizes: IMPORT_CHUNK_EVENTS (default 50,000) events a commit, at most. */
export function usageImportTuning(env = process.env): UsageFileTuning {
  const chunkEvents = envNumber(env, "IMPORT_CHUNK_EVENTS", { fallback: DEFAULT_TUNING.chunkEvents, min: 1, max: 10_000_000 });
  return { ...DEFAULT_TUNING, chunkEvents, batchEvents: Math.min(DEFAULT_TUNING.batchEvents, chunkEvents) };
}
