// Starts the real service (the same startService the CLI's `serve` runs) on a free port of 127.0.0.1,
// on a fresh database of the given dialect, seeded with the acme and globex fixtures.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { loadServeConfig } from "../../src/config.js";
import type { Permission } from "../../src/domain/permissions.js";
import { PERMISSIONS } from "../../src/domain/permissions.js";
import { createLogger } from "../../src/interceptors/logging.js";
import { startService } from "../../src/main.js";
import { AccessAdmin } from "../../src/operations/access-admin.js";
import { AuthRepository } from "../../src/storage/auth-repository.js";
import type { Database } from "../../src/storage/database.js";
import { DirectoryRepository } from "../../src/storage/directory-repository.js";
import type { DialectName } from "./databases.js";
import { createSeededDatabase } from "./seeded-database.js";

export interface TestService {
  baseUrl: string;
  port: number;
  databaseUrl: string;
  /** The server's environment (its settings and master keys): a second server on the same database starts with it. */
  env: NodeJS.ProcessEnv;
  /** A second connection to the same database, for seeding and inspecting. */
  database: Database;
  access: AccessAdmin;
  /** Every log line the server wrote, as text. */
  logs: string[];
  /** A fresh access token for an enterprise with the given permissions. */
  token(permissions?: readonly Permission[], enterpriseId?: string, ttlSeconds?: number): Promise<string>;
  close(): Promise<void>;
}

/**
 * `env` is the server's whole environment (nothing comes from process.env, which stays untouched):
 * its limits (MAX_CONNECTIONS, REQUEST_TIMEOUT_MS, RATE_LIMIT_RPS, …), its store's settings
 * (STORE_BUSY_TIMEOUT_MS) and its master keys (ENTERPRISE_ADMIN_MASTER_KEY_FILE or
 * ENTERPRISE_ADMIN_MASTER_KEY; by default a key file of its own in a temp folder, removed by close()).
 * Rate limits are off unless `env` turns them on (rate-limits.test.ts does): a test's quick loop of
 * calls or token exchanges must not meet a 429 meant for production traffic.
 */
const NO_RATE_LIMITS = { RATE_LIMIT_RPS: "0", TOKEN_EXCHANGE_LIMIT_PER_APP_ID: "0", TOKEN_EXCHANGE_LIMIT_PER_ADDRESS: "0" };

export async function startTestService(dialect: DialectName, env: Record<string, string> = {}): Promise<TestService> {
  // A PostgreSQL service's default key file would be ./data/master.key: each service gets one in a temp folder.
  const keyDir = mkdtempSync(join(tmpdir(), "eadmin-keys-"));
  const serverEnv = { LOG_LEVEL: "info", ...NO_RATE_LIMITS, ENTERPRISE_ADMIN_MASTER_KEY_FILE: join(keyDir, "master.key"), ...env };
  const { testDb, database } = await createSeededDatabase(dialect);
  const access = new AccessAdmin(new AuthRepository(database), new DirectoryRepository(database.db));

  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(...String(chunk).split("\n").filter(Boolean));
      done();
    },
  });
  const service = await startService(
    loadServeConfig({ port: "0", host: "127.0.0.1", db: testDb.url }, serverEnv),
    createLogger({ level: "info", destination: sink }),
    serverEnv,
  );
  return {
    baseUrl: `http://127.0.0.1:${service.port}`,
    port: service.port,
    databaseUrl: testDb.url,
    env: serverEnv,
    database,
    access,
    logs,
    async token(permissions = PERMISSIONS, enterpriseId = "acme", ttlSeconds = 3600) {
      return (await access.createToken(enterpriseId, [...permissions], ttlSeconds)).accessToken;
    },
    async close() {
      await service.close();
      await database.close();
      await testDb.drop();
      rmSync(keyDir, { recursive: true, force: true });
    },
  };
}
