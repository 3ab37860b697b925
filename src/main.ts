// config -> migrate -> database -> listen; SIGTERM/SIGINT drains in-flight calls and closes; a second
// signal exits at once.
import type { Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { createApp } from "./app.js";
import type { ServeConfig } from "./config.js";
import { createLogger, endLog, type Logger } from "./interceptors/logging.js";
import { describeKeySource, loadLocalKeyProvider } from "./keys/local-key-provider.js";
import { ServiceMetrics } from "./metrics/service-metrics.js";
import { listen } from "./server.js";
import { migrateToLatest, openDatabase } from "./storage/database.js";
import { EnvironmentConfigRepository } from "./storage/environment-config-repository.js";
import { storeUnreachableOf } from "./storage/store-unreachable.js";

export interface RunningService {
  port: number;
  close(): Promise<void>;
}

/** `env`: where the store's settings and the master keys are read (the rest is in `config`). */
export async function startService(config: ServeConfig, logger: Logger = createLogger({ level: config.logLevel }), env: NodeJS.ProcessEnv = process.env): Promise<RunningService> {
  // One registry per running service; the store reports its lock waits to it.
  const metrics = new ServiceMetrics();
  await migrate(config.databaseUrl, env);
  const database = openDatabase(config.databaseUrl, { backgroundCheckpoints: true, observer: metrics, env, statementTimeoutMs: config.limits.requestTimeoutMs,
    applicationName: SERVER_APPLICATION_NAME });
  try {
    const storeKeyId = await new EnvironmentConfigRepository(database).currentMasterKey();
    const keys = await loadLocalKeyProvider({ databaseUrl: config.databaseUrl, env, storeKeyId });
    // Served all the same (nothing is written, the rest of the service works), but said now rather than at the first secret's 503.
    if (storeKeyId !== undefined && !(await keys.keyIds()).includes(storeKeyId)) {
      logger.warn({ master_key_id: storeKeyId, key_source: describeKeySource(keys.source) },
        "the master key of this database's secrets is not in this server's key source: creating configurations and writing secrets get 503 until it is");
    }
    const app = createApp({ database, logger, keys, rateLimits: config.rateLimits, requestTimeoutMs: config.limits.requestTimeoutMs,
      metrics, metricsAccess: config.metrics, corsAllowedOrigins: config.corsAllowedOrigins, reportLimits: config.reportLimits });
    const listener = await listen(app, config.port, config.host, config.limits);
    logger.info({ port: listener.port, host: config.host, database: database.dialect }, "listening");
    return {
      port: listener.port,
      async close() {
        await listener.close();
        // A statement on a PostgreSQL that stopped answering holds its connection, and the pool's end waits for it, for good.
        const closed = await Promise.race([database.close().then(() => true), sleep(STORE_CLOSE_WAIT_MS, false, { ref: false })]);
        if (!closed) logger.warn({ waited_ms: STORE_CLOSE_WAIT_MS }, "the store did not close (a statement or checkpoint still waits for it): stopping without it");
      },
    };
  } catch (error) {
    await database.close();
    throw storeUnreachableOf(error, database.location) ?? error;
  }
}

/** What PostgreSQL's pg_stat_activity shows for a server's connections (the CLI's are "enterprise-admin"). */
const SERVER_APPLICATION_NAME = "enterprise-admin serve";

/** How long stopping waits for the store's connections to close once every call has ended. */
const STORE_CLOSE_WAIT_MS = 5_000;

/** On a store of its own, without the serving bounds: a migration may build an index over every event, or wait for another server's. */
async function migrate(databaseUrl: string, env: NodeJS.ProcessEnv): Promise<void> {
  const database = openDatabase(databaseUrl, { env, applicationName: SERVER_APPLICATION_NAME });
  try {
    await migrateToLatest(database);
  } catch (error) {
    throw storeUnreachableOf(error, database.location) ?? error;
  } finally {
    await database.close();
  }
}

/**
 * Runs until SIGTERM or SIGINT, then drains and exits the process (the log goes to its stdout);
 * `env` as for startService; the console's address is written to `notices`.
 */
export async function serveUntilSignal(config: ServeConfig, env: NodeJS.ProcessEnv, notices: Writable): Promise<void> {
  const logger = createLogger({ level: config.logLevel });
  // The signals are taken from before the "listening" line: one sent as soon as it is read (a supervisor's, on a busy machine, before
  // this function went on) ended the process at once, undrained.
  const started = startService(config, logger, env);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      logger.warn({ signal }, "second signal: exiting without draining");
      logger.flush();
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal, grace_ms: config.limits.shutdownGraceMs }, "shutting down: draining in-flight calls");
    // A start that fails is reported by the caller, as without a signal.
    started.then(async (service) => {
      await service.close();
      logger.info("stopped");
      // Written out first: lines still on their way (the cut calls') would land after "stopped", or not at all.
      endLog(logger, () => process.exit(0));
    }, () => {});
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  const service = await started;
  // For a person at the terminal (the JSON log goes to stdout): where the browser console is.
  notices.write(`usage console: ${consoleUrl(config.host, service.port)}\n`);
}

/** The console's address; a wildcard bind address is shown as the loopback one, which it includes. */
export function consoleUrl(host: string, port: number): string {
  const shown = host === "0.0.0.0" || host === "" ? "127.0.0.1" : host === "::" ? "::1" : host;
  return `http://${shown.includes(":") ? `[${shown}]` : shown}:${port}/console`;
}
