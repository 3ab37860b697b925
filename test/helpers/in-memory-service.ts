// The business services in memory: the real routes and call chain (routes.ts) over a fresh database
// seeded with the acme and globex fixtures, called through connect-es's router transport: no port,
// no HTTP, every interceptor and handler as the server runs them.
import { randomBytes } from "node:crypto";
import type { DescService } from "@bufbuild/protobuf";
import { ConnectError, createClient, createRouterTransport, type Client, type Code, type Interceptor } from "@connectrpc/connect";
import { ErrorDetailSchema } from "../../gen/enterprise_admin/v1/errors_pb.js";
import { DEFAULT_RATE_LIMITS, RateLimits } from "../../src/domain/rate-limits.js";
import type { Permission } from "../../src/domain/permissions.js";
import { PERMISSIONS } from "../../src/domain/permissions.js";
import { loadLocalKeyProvider, MASTER_KEY_ENV } from "../../src/keys/local-key-provider.js";
import { AccessAdmin } from "../../src/operations/access-admin.js";
import { createBusiness, routes } from "../../src/routes.js";
import { HealthState } from "../../src/services/health-service.js";
import { AuthRepository } from "../../src/storage/auth-repository.js";
import type { Database } from "../../src/storage/database.js";
import { DirectoryRepository } from "../../src/storage/directory-repository.js";
import type { DialectName } from "./databases.js";
import { createSeededDatabase } from "./seeded-database.js";

export interface InMemoryService {
  database: Database;
  /** The operator's use cases (apps, tokens) on the same database. */
  access: AccessAdmin;
  /** A client of `service` that sends `token` as its bearer token (none when undefined). */
  client<S extends DescService>(service: S, token?: string): Client<S>;
  /** A fresh access token for an enterprise with the given permissions. */
  token(permissions?: readonly Permission[], enterpriseId?: string): Promise<string>;
  close(): Promise<void>;
}

/** Rate limits are off, as in the end-to-end tests: a quick loop of calls must not meet a 429. */
const NO_RATE_LIMITS = { ...DEFAULT_RATE_LIMITS, callsPerSecond: 0, exchangesPerMinutePerAppId: 0, exchangesPerMinutePerAddress: 0 };

export async function startInMemoryService(dialect: DialectName): Promise<InMemoryService> {
  const { testDb, database } = await createSeededDatabase(dialect);
  const access = new AccessAdmin(new AuthRepository(database), new DirectoryRepository(database.db));
  const keys = await loadLocalKeyProvider({ databaseUrl: testDb.url, env: { [MASTER_KEY_ENV]: randomBytes(32).toString("base64") } });
  const { services, chain } = createBusiness({ database, keys, rateLimits: new RateLimits(NO_RATE_LIMITS) });
  const served = routes(services, chain.interceptors, new HealthState(services.map((s) => s.service.typeName)));
  return {
    database,
    access,
    client(service, token) {
      const bearer: Interceptor = (next) => (req) => {
        if (token !== undefined) req.header.set("authorization", `Bearer ${token}`);
        return next(req);
      };
      return createClient(service, createRouterTransport(served, { transport: { interceptors: [bearer] } }));
    },
    async token(permissions = PERMISSIONS, enterpriseId = "acme") {
      return (await access.createToken(enterpriseId, [...permissions], 3600)).accessToken;
    },
    async close() {
      await database.close();
      await testDb.drop();
    },
  };
}

/** How a call failed: the RPC code and the ErrorDetail's number and message (the REST envelope's). */
export async function failureOf(call: Promise<unknown>): Promise<{ code: Code; errorCode: number | undefined; message: string | undefined }> {
  try {
    await call;
  } catch (error) {
    const connectError = ConnectError.from(error);
    const [detail] = connectError.findDetails(ErrorDetailSchema);
    return { code: connectError.code, errorCode: detail?.code, message: detail?.message };
  }
  throw new Error("the call succeeded");
}
