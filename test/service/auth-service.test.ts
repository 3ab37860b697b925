// AuthService in memory (router transport, real chain and database): the token exchange, public,
// and whoami, open to any valid token.
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../../gen/enterprise_admin/v1/auth_pb.js";
import { ErrorCode } from "../../src/domain/errors.js";
import { dialects } from "../helpers/databases.js";
import { failureOf, startInMemoryService, type InMemoryService } from "../helpers/in-memory-service.js";

describe.each(dialects)("AuthService in memory (%s)", (dialect) => {
  let service: InMemoryService;

  beforeAll(async () => {
    service = await startInMemoryService(dialect);
  });
  afterAll(() => service.close());

  it("an app's id and secret buy a 2-hour token carrying the app's permissions, which whoami reports", async () => {
    const app = await service.access.createApp("acme", ["departments:read", "statistics:read"], "reporting");
    const { accessToken, expire } = await service.client(AuthService).createAccessToken({ appId: app.app_id, appSecret: app.app_secret });
    expect(expire).toBe(7200);
    const me = await service.client(AuthService, accessToken).whoAmI({});
    expect(me).toMatchObject({ enterpriseId: "acme", enterpriseName: "Acme Corp", appId: app.app_id, permissions: ["departments:read", "statistics:read"] });
    expect(JSON.stringify(me, (_, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain(accessToken);
  });

  it("a wrong secret is 1001 (unauthenticated); whoami without a token is 1002", async () => {
    const app = await service.access.createApp("acme", ["departments:read"]);
    expect(await failureOf(service.client(AuthService).createAccessToken({ appId: app.app_id, appSecret: "eas_wrong" }))).toEqual({
      code: Code.Unauthenticated, errorCode: ErrorCode.INVALID_APP_CREDENTIALS, message: "invalid app_id or app_secret",
    });
    expect(await failureOf(service.client(AuthService).whoAmI({}))).toMatchObject({ code: Code.Unauthenticated, errorCode: ErrorCode.INVALID_ACCESS_TOKEN });
  });
});
