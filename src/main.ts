// config -> database -> migrate -> listen; SIGTERM/SIGINT drains in-flight calls and closes.
import { createApp } from "./app.js";
import type { ServeConfig } from "./config.js";
import { createLogger, type Logger } from "./interceptors/logging.js";
import { loadLocalKeyProvider } from "./keys/local-key-provider.js";
import { listen } from "./server.js";
import { migrateToLatest, openDatabase } from "./storage/database.js";

export interface RunningService {
  port: number;
  close(): Promise<void>;
}

export async function startService(config: ServeConfig, logger: Logger = createLogger({ level: config.logLevel })): Promise<RunningService> {
  const database = openDatabase(config.databaseUrl, { backgroundCheckpoints: true });
  try {
    await migrateToLatest(database);
    const keys = await loadLocalKeyProvider({ databaseUrl: config.databaseUrl });
    const app = createApp({ database, logger, keys, rateLimits: config.rateLimits });
    const listener = await listen(app, config.port, config.host);
    logger.info({ port: listener.port, host: config.host, database: database.dialect }, "listening");
    return {
      port: listener.port,
      async close() {
        await listener.close();
        await database.close();
      },
    };
  } catch (error) {
    await database.close();
    throw error;
  }
}

/** Runs until SIGTERM or SIGINT, then drains and exits. */
export async function serveUntilSignal(config: ServeConfig): Promise<void> {
  const logger = createLogger({ level: config.logLevel });
  const service = await startService(config, logger);
  const stop = (signal: string) => {
    logger.info({ signal }, "shutting down: draining in-flight calls");
    service.close().then(() => {
      logger.info("stopped");
      logger.flush();
      process.exit(0);
    });
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}
