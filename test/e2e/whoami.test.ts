// End to end, over the real port: GET /openapi/v1/auth/whoami and AuthService.WhoAmI over Connect and
// gRPC describe the calling token (enterprise, app, token id, permissions, expiry), never the token
// itself; any valid token may ask, whatever its permissions; no or a bad token is 1002.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../../gen/enterprise_admin/v1/auth_pb.js";
import { ErrorDetailSchema } from "../../gen/enterprise_admin/v1/errors_pb.js";
import { dialects } from "../helpers/databases.js";
import { startTestService, type TestService } from "../helpers/service.js";

const WHOAMI = "/openapi/v1/auth/whoami";

describe.each(dialects)("whoami on %s", (dialect) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService(dialect);
  });
  afterAll(async () => svc?.close());

  const rest = async (authorization?: string) => {
    const res = await fetch(svc.baseUrl + WHOAMI, { headers: authorization === undefined ? {} : { authorization } });
    const text = await res.text();
    return { status: res.status, text, json: JSON.parse(text) };
  };
  /** The id of the one token an app obtained. */
  const tokenIdOf = async (appId: string) => (await svc.access.listTokens("acme")).find((t) => t.app_id === appId)!.token_id;

  it("REST: a token of an app, whatever its one permission, sees its enterprise, app, token id, permissions and expiry, never itself", async () => {
    const app = await svc.access.createApp("acme", ["environments:read"], "whoami-app");
    const before = Math.floor(Date.now() / 1000);
    const exchanged = await fetch(`${svc.baseUrl}/openapi/v1/auth/token`, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ app_id: app.app_id, app_secret: app.app_secret }),
    });
    const accessToken = ((await exchanged.json()) as { data: { access_token: string } }).data.access_token;
    const reply = await rest(`Bearer ${accessToken}`);
    expect(reply.status).toBe(200);
    expect(reply.json).toStrictEqual({
      code: 0, message: "success", request_id: expect.any(String),
      data: {
        enterprise_id: "acme", enterprise_name: "Acme Corp", app_id: app.app_id, token_id: await tokenIdOf(app.app_id),
        permissions: ["environments:read"], expire_time: expect.any(Number), expires_in: expect.any(Number),
      },
    });
    expect(reply.json.data.expire_time).toBeGreaterThanOrEqual(before + 7200);
    expect(reply.json.data.expire_time).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 7200);
    expect(reply.json.data.expires_in).toBeGreaterThan(7190);
    expect(reply.json.data.expires_in).toBeLessThanOrEqual(7200);
    expect(reply.text).not.toContain(accessToken);
  });

  it("REST: a token made by `token create` has no app; the other enterprise's token sees only its own enterprise", async () => {
    const own = await rest(`Bearer ${await svc.token(["departments:read", "statistics:read"], "acme", 600)}`);
    expect(own.json.data).toMatchObject({ enterprise_id: "acme", app_id: "", permissions: ["departments:read", "statistics:read"] });
    expect(own.json.data.expires_in).toBeLessThanOrEqual(600);
    const other = await rest(`Bearer ${await svc.token(["usage:write"], "globex")}`);
    expect(other.json.data).toMatchObject({ enterprise_id: "globex", enterprise_name: "Globex", app_id: "", permissions: ["usage:write"] });
  });

  it("REST: no token, a wrong one, or a revoked one is 401 with code 1002", async () => {
    const revoked = await svc.access.createToken("acme", ["departments:read"]);
    await svc.access.revokeToken(revoked.tokenId);
    for (const authorization of [undefined, "Bearer not-a-token", `Bearer ${revoked.accessToken}`]) {
      const reply = await rest(authorization);
      expect(reply.status).toBe(401);
      expect(reply.json).toMatchObject({ code: 1002, data: null });
    }
  });

  for (const [name, transport] of [
    ["Connect", () => createConnectTransport({ baseUrl: svc.baseUrl, httpVersion: "1.1" })],
    ["gRPC", () => createGrpcTransport({ baseUrl: svc.baseUrl })],
  ] as const) {
    it(`${name}: WhoAmI answers as REST does, and a call without a token is unauthenticated with detail 1002`, async () => {
      const { accessToken, tokenId } = await svc.access.createToken("acme", ["statistics:read"]);
      const client = createClient(AuthService, transport());
      const answer = await client.whoAmI({}, { headers: { authorization: `Bearer ${accessToken}` } });
      expect(answer).toMatchObject({ enterpriseId: "acme", enterpriseName: "Acme Corp", appId: "", tokenId, permissions: ["statistics:read"] });
      expect(answer.expireTime).toBe(BigInt((await rest(`Bearer ${accessToken}`)).json.data.expire_time));
      const error = await client.whoAmI({}).then(() => undefined, (e: unknown) => ConnectError.from(e));
      expect(error?.code).toBe(Code.Unauthenticated);
      expect(error?.findDetails(ErrorDetailSchema).map((d) => d.code)).toStrictEqual([1002]);
    });
  }
});
