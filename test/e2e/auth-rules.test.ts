// End to end: authentication and permissions (docs/api-rules.md, Authentication): the token exchange, the
// access-token checks every business call makes, and that no credential reaches a response or a log line.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { request as httpRequest } from "node:http";
import { connect } from "node:http2";
import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../../gen/enterprise_admin/v1/auth_pb.js";
import { DepartmentService } from "../../gen/enterprise_admin/v1/department_pb.js";
import { ErrorDetailSchema } from "../../gen/enterprise_admin/v1/errors_pb.js";
import { dialects } from "../helpers/databases.js";
import { startTestService, type TestService } from "../helpers/service.js";

const TOKEN = "/openapi/v1/auth/token";
const BATCH_GET = "/openapi/v1/departments/batch-get";
const ENGINEERING = { department_id: "110", parent_department_id: "100", name: "Engineering", full_path: "Acme Corp/Engineering", depth: 1 };

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

const success = (data: unknown) => ({ code: 0, message: "success", request_id: expect.any(String), data });
const failure = (code: number, message: unknown = expect.any(String)) => ({ code, message, request_id: expect.any(String), data: null });
const execFileAsync = promisify(execFile);
const hasCurl = () => {
  try {
    execFileSync("curl", ["--version"]);
    return true;
  } catch {
    return false;
  }
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(dialects)("auth rules (%s)", (dialect) => {
  let svc: TestService;

  beforeAll(async () => {
    svc = await startTestService(dialect);
  });

  afterAll(async () => {
    await svc?.close();
  });

  async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
    const res = await fetch(svc.baseUrl + path, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, json: JSON.parse(text) };
  }

  const exchange = (body: unknown) => post(TOKEN, body);
  const batchGet = (authorization: string | undefined) =>
    post(BATCH_GET, { department_ids: ["110"] }, authorization === undefined ? {} : { authorization });
  const bearer = (token: string) => `Bearer ${token}`;

  async function expectWorks(token: string): Promise<void> {
    const reply = await batchGet(bearer(token));
    expect(reply.status).toBe(200);
    expect(reply.json).toStrictEqual(success({ items: [ENGINEERING], not_found_department_ids: [] }));
  }

  async function expectInvalidToken(authorization: string | undefined): Promise<void> {
    const reply = await batchGet(authorization);
    expect(reply.status).toBe(401);
    expect(reply.json).toStrictEqual(failure(1002));
  }

  describe("token exchange", () => {
    it("returns access_token and expire 7200 for a live app", async () => {
      const app = await svc.access.createApp("acme", ["departments:read"], "exchange-ok");
      const reply = await exchange({ app_id: app.app_id, app_secret: app.app_secret });
      expect(reply.status).toBe(200);
      expect(reply.json).toStrictEqual(success({ access_token: expect.any(String), expire: 7200 }));
      expect(reply.json.data.access_token.length).toBeGreaterThan(20);
      expect(reply.json.request_id).toBe(reply.headers.get("x-request-id"));
    });

    it("issues a token that works for the app's permissions", async () => {
      const app = await svc.access.createApp("acme", ["departments:read"], "exchange-works");
      const { json } = await exchange({ app_id: app.app_id, app_secret: app.app_secret });
      await expectWorks(json.data.access_token);
    });

    it("issues a token that carries only the app's permissions (30017 without departments:read)", async () => {
      const app = await svc.access.createApp("acme", ["statistics:read", "environments:read"], "exchange-no-departments");
      const { json } = await exchange({ app_id: app.app_id, app_secret: app.app_secret });
      const reply = await batchGet(bearer(json.data.access_token));
      expect(reply.status).toBe(403);
      expect(reply.json).toStrictEqual(failure(30017, expect.stringContaining("departments:read")));
    });

    it("issues a token confined to the app's enterprise", async () => {
      const app = await svc.access.createApp("globex", ["departments:read"], "exchange-globex");
      const { json } = await exchange({ app_id: app.app_id, app_secret: app.app_secret });
      const reply = await post(BATCH_GET, { department_ids: ["110", "910"] }, { authorization: bearer(json.data.access_token) });
      expect(reply.json).toStrictEqual(success({
        items: [{ department_id: "910", parent_department_id: "900", name: "Engineering", full_path: "Globex/Engineering", depth: 1 }],
        not_found_department_ids: ["110"],
      }));
    });

    it("rejects a wrong app_secret with 1001", async () => {
      const app = await svc.access.createApp("acme", ["departments:read"], "exchange-wrong-secret");
      const reply = await exchange({ app_id: app.app_id, app_secret: `${app.app_secret}x` });
      expect(reply.status).toBe(401);
      expect(reply.json).toStrictEqual(failure(1001));
    });

    it("rejects an unknown app_id with 1001", async () => {
      const reply = await exchange({ app_id: "app_doesnotexist", app_secret: "eas_whatever" });
      expect(reply.status).toBe(401);
      expect(reply.json).toStrictEqual(failure(1001));
    });

    it("rejects a revoked app's credentials with 1001", async () => {
      const app = await svc.access.createApp("acme", ["departments:read"], "exchange-revoked");
      expect(await svc.access.revokeApp(app.app_id)).toBe(true);
      const reply = await exchange({ app_id: app.app_id, app_secret: app.app_secret });
      expect(reply.status).toBe(401);
      expect(reply.json).toStrictEqual(failure(1001));
    });

    it("rejects a missing app_secret with 4001 naming it", async () => {
      const app = await svc.access.createApp("acme", ["departments:read"], "exchange-missing-secret");
      const reply = await exchange({ app_id: app.app_id });
      expect(reply.status).toBe(400);
      expect(reply.json).toStrictEqual(failure(4001, expect.stringContaining("app_secret")));
    });

    it("rejects a missing app_id with 4001 naming it", async () => {
      const reply = await exchange({ app_secret: "eas_whatever" });
      expect(reply.status).toBe(400);
      expect(reply.json).toStrictEqual(failure(4001, expect.stringContaining("app_id")));
    });

    it("needs no Authorization header, and ignores a bad one", async () => {
      const app = await svc.access.createApp("acme", ["departments:read"], "exchange-public");
      const reply = await post(TOKEN, { app_id: app.app_id, app_secret: app.app_secret }, { authorization: "Bearer garbage" });
      expect(reply.status).toBe(200);
      expect(reply.json.code).toBe(0);
    });
  });

  describe("access token on business calls", () => {
    it("rejects a call without Authorization with 1002", async () => {
      await expectInvalidToken(undefined);
    });

    it('rejects "Bearer garbage" with 1002', async () => {
      await expectInvalidToken("Bearer garbage");
    });

    it("rejects a non-Bearer scheme carrying a valid token with 1002", async () => {
      const token = await svc.token(["departments:read"]);
      await expectInvalidToken(`Basic ${token}`);
      await expectInvalidToken(token);
    });

    it("says whether the token is missing or malformed", async () => {
      const MISSING = "access token missing: send Authorization: Bearer <access_token>";
      const MALFORMED = 'access token malformed: send one Authorization header, "Bearer " and the token (1 to 512 printable ASCII characters)';
      const token = await svc.token(["departments:read"]);
      for (const [authorization, message] of [[undefined, MISSING], ["", MISSING], ["Bearer  " + token, MALFORMED], [`Bearer ${"a".repeat(513)}`, MALFORMED],
        ["Bearer t\u00f6ken", MALFORMED]] as const) {
        const reply = await batchGet(authorization);
        expect([reply.status, reply.json]).toStrictEqual([401, failure(1002, message)]);
      }
    });

    it("two Authorization headers are refused with 1002 whichever comes first (Node kept the first), over HTTP/1.1 and h2", async () => {
      const token = await svc.token(["departments:read"]);
      const other = await svc.token(["departments:read"], "globex");
      const body = JSON.stringify({ department_ids: ["110"] });
      for (const pair of [[bearer(token), bearer(other)], [bearer(token), "Bearer garbage"], ["Bearer garbage", bearer(token)]]) {
        const reply = await new Promise<{ status: number; json: unknown }>((resolve, reject) => {
          const request = httpRequest(svc.baseUrl + BATCH_GET, { method: "POST", headers: { "content-type": "application/json" } }, (res) => {
            let text = "";
            res.setEncoding("utf8").on("data", (chunk: string) => (text += chunk)).on("end", () => resolve({ status: res.statusCode!, json: JSON.parse(text) }));
          });
          request.setHeader("authorization", pair); // two field lines
          request.on("error", reject);
          request.end(body);
        });
        expect(reply, pair.join(" | ")).toStrictEqual({ status: 401, json: failure(1002, expect.stringContaining("access token malformed")) });

      }
      // HTTP/2: Node's and grpc-js's clients refuse to send two; curl sends them.
      if (!hasCurl()) return;
      const { stdout } = await execFileAsync("curl", ["-s", "--http2-prior-knowledge", "-H", "content-type: application/json",
        "-H", `authorization: ${bearer(token)}`, "-H", `authorization: ${bearer(other)}`, "--data-binary", body, svc.baseUrl + BATCH_GET]);
      expect(JSON.parse(stdout)).toStrictEqual(failure(1002, expect.stringContaining("access token malformed")));
    });

    it("accepts a token until it expires, then rejects it with 1002", async () => {
      const token = await svc.token(["departments:read"], "acme", 2);
      await expectWorks(token);
      await sleep(2100); // expiry is checked in whole seconds: 2.1 s is past it whatever the start
      await expectInvalidToken(bearer(token));
    });

    it("rejects a token of an app revoked after the exchange with 1002", async () => {
      const app = await svc.access.createApp("acme", ["departments:read"], "revoked-after-exchange");
      const { json } = await exchange({ app_id: app.app_id, app_secret: app.app_secret });
      const token = json.data.access_token as string;
      await expectWorks(token);
      await svc.access.revokeApp(app.app_id);
      await expectInvalidToken(bearer(token));
    });

    it("exchanges that read the app before its revoke committed, and store their token after, get 1001, and no token of theirs works", async () => {
      const app = await svc.access.createApp("acme", ["departments:read"], "revoked-during-exchange");
      const credentials = { app_id: app.app_id, app_secret: app.app_secret };
      // The revoke's transaction (app revoke's statements) stays open while the exchanges start: they read the app as it was committed, live,
      // then store their token. SQLite: they wait for its write lock; PostgreSQL: for the app row it updated.
      let exchanges: Promise<Reply>[] = [];
      await svc.database.writeTransaction(async (trx) => {
        const now = Math.floor(Date.now() / 1000);
        await trx.updateTable("app").set({ revoked_at: now }).where("app_id", "=", app.app_id).execute();
        await trx.updateTable("access_token").set({ revoked_at: now }).where("app_id", "=", app.app_id).where("revoked_at", "is", null).execute();
        exchanges = Array.from({ length: 8 }, () => exchange(credentials));
        await sleep(300);
      });
      const replies = await Promise.all(exchanges);
      expect(replies.map((r) => [r.status, r.json.code])).toStrictEqual(Array.from({ length: 8 }, () => [401, 1001]));
      expect((await svc.access.listTokens("acme")).filter((t) => t.app_id === app.app_id && !t.revoked)).toStrictEqual([]);
    });

    it("revoking one app leaves another app's tokens working", async () => {
      const kept = await svc.access.createApp("acme", ["departments:read"], "kept");
      const gone = await svc.access.createApp("acme", ["departments:read"], "gone");
      const keptToken = (await exchange({ app_id: kept.app_id, app_secret: kept.app_secret })).json.data.access_token as string;
      await svc.access.revokeApp(gone.app_id);
      await expectWorks(keptToken);
    });

    it("rejects a token without departments:read with 30017/403", async () => {
      const token = await svc.token(["statistics:read", "environments:read", "environments:write", "usage:write"]);
      const reply = await batchGet(bearer(token));
      expect(reply.status).toBe(403);
      expect(reply.json).toStrictEqual(failure(30017, expect.stringContaining("departments:read")));
    });

    it("checks the token on the children and search routes too", async () => {
      for (const path of ["/openapi/v1/departments/110/children", "/openapi/v1/departments/search?keyword=engin"]) {
        const missing = await fetch(svc.baseUrl + path);
        expect(missing.status).toBe(401);
        expect(await missing.json()).toStrictEqual(failure(1002));
        const denied = await fetch(svc.baseUrl + path, { headers: { authorization: bearer(await svc.token(["statistics:read"])) } });
        expect(denied.status).toBe(403);
        expect(await denied.json()).toStrictEqual(failure(30017));
      }
    });
  });

  describe("credentials never leak", () => {
    /** Waits for the access-log line of a request: the server writes it when the response closes. */
    async function logLineOf(requestId: string): Promise<string> {
      for (let i = 0; i < 100; i++) {
        const line = svc.logs.find((l) => l.includes(requestId));
        if (line) return line;
        await sleep(10);
      }
      throw new Error(`no log line for request ${requestId}`);
    }

    it("no response or log line carries an app_secret or an access token", async () => {
      const app = await svc.access.createApp("acme", ["departments:read"], "leak-check");
      const revokedApp = await svc.access.createApp("acme", ["departments:read"], "leak-check-revoked");
      const replies: Reply[] = [];
      const ok = await exchange({ app_id: app.app_id, app_secret: app.app_secret });
      replies.push(ok);
      const revokedToken = (await exchange({ app_id: revokedApp.app_id, app_secret: revokedApp.app_secret })).json.data.access_token as string;
      await svc.access.revokeApp(revokedApp.app_id);
      const accessToken = ok.json.data.access_token as string;
      const directToken = await svc.token(["statistics:read"]);

      replies.push(await exchange({ app_id: app.app_id, app_secret: `${app.app_secret}-wrong` }));
      replies.push(await exchange({ app_id: revokedApp.app_id, app_secret: revokedApp.app_secret }));
      replies.push(await exchange({ app_id: app.app_id, app_secret: app.app_secret, extra: accessToken }));
      replies.push(await exchange({ app_id: app.app_id, app_secret: 42 }));
      replies.push(await exchange(`{"app_id":"${app.app_id}","app_secret":"${app.app_secret}"`)); // malformed JSON
      replies.push(await batchGet(bearer(accessToken)));
      replies.push(await batchGet(bearer(revokedToken)));
      replies.push(await batchGet(bearer(directToken)));
      replies.push(await batchGet(`Bearer ${accessToken}x`));

      const credentials = [app.app_secret, revokedApp.app_secret, accessToken, revokedToken, directToken];
      const statuses = replies.map((r) => r.status);
      expect(statuses).toStrictEqual([200, 401, 401, 400, 400, 400, 200, 401, 403, 401]);
      for (const reply of replies.slice(1)) {
        for (const credential of credentials) expect(reply.text).not.toContain(credential);
      }
      for (const credential of credentials.filter((c) => c !== accessToken)) expect(replies[0]!.text).not.toContain(credential);

      for (const reply of replies) await logLineOf(reply.json.request_id);
      const logs = svc.logs.join("\n");
      for (const credential of credentials) expect(logs).not.toContain(credential);
    });

    it("a malformed body's 4001 message does not quote the app_secret it contains", async () => {
      const app = await svc.access.createApp("acme", ["departments:read"], "leak-check-malformed");
      // The secret left unquoted: JSON.parse's own message quotes the text around the bad token.
      const reply = await exchange(`{"app_id":"${app.app_id}","app_secret":${app.app_secret}}`);
      expect(reply.status).toBe(400);
      expect(reply.json).toStrictEqual(failure(4001, expect.stringContaining("body")));
      expect(reply.text).not.toContain(app.app_secret.slice(0, 10));
    });
  });

  describe("over the Connect protocol", () => {
    const transport = () => createConnectTransport({ baseUrl: svc.baseUrl, httpVersion: "1.1" });
    const failureOf = (promise: Promise<unknown>) => promise.then(() => undefined, (e: unknown) => ConnectError.from(e));
    const details = (error: ConnectError | undefined) => error?.findDetails(ErrorDetailSchema).map((d) => d.code);

    it("exchanges app credentials for a token that works", async () => {
      const app = await svc.access.createApp("acme", ["departments:read"], "connect-exchange");
      const res = await createClient(AuthService, transport()).createAccessToken({ appId: app.app_id, appSecret: app.app_secret });
      expect(res.expire).toBe(7200);
      await expectWorks(res.accessToken);
    });

    it("rejects a wrong app_secret with unauthenticated carrying 1001", async () => {
      const app = await svc.access.createApp("acme", ["departments:read"], "connect-wrong-secret");
      const error = await failureOf(createClient(AuthService, transport()).createAccessToken({ appId: app.app_id, appSecret: "nope" }));
      expect(error?.code).toBe(Code.Unauthenticated);
      expect(details(error)).toStrictEqual([1001]);
    });

    it("rejects a call without a token with unauthenticated carrying 1002", async () => {
      const error = await failureOf(createClient(DepartmentService, transport()).batchGetDepartments({ departmentIds: ["110"] }));
      expect(error?.code).toBe(Code.Unauthenticated);
      expect(details(error)).toStrictEqual([1002]);
    });

    it("rejects a token without departments:read with permission_denied carrying 30017", async () => {
      const token = await svc.token(["statistics:read"]);
      const error = await failureOf(
        createClient(DepartmentService, transport()).batchGetDepartments({ departmentIds: ["110"] }, { headers: { authorization: bearer(token) } }),
      );
      expect(error?.code).toBe(Code.PermissionDenied);
      expect(details(error)).toStrictEqual([30017]);
      expect(error?.rawMessage).toContain("departments:read");
    });
  });

  describe("on every RPC protocol, the token before the body", () => {
    const BATCH_GET_RPC = "/enterprise_admin.v1.DepartmentService/BatchGetDepartments";
    /** One HTTP/2 request whose body is sent, then left open: the answer's status and code, from headers or trailers. */
    async function h2Call(headers: Record<string, string>, body: Buffer, endBody: boolean): Promise<{ status: number; code: string }> {
      const session = connect(svc.baseUrl);
      try {
        const stream = session.request({ ":method": "POST", ":path": BATCH_GET_RPC, ...headers });
        stream.write(body);
        if (endBody) stream.end();
        return await new Promise((resolve, reject) => {
          let status = 0;
          let code = "";
          stream.on("response", (h) => {
            status = Number(h[":status"]);
            code = String(h["grpc-status"] ?? "");
          });
          stream.on("trailers", (t) => (code = String(t["grpc-status"] ?? code)));
          let text = "";
          stream.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")));
          const timer = setTimeout(() => reject(new Error("no answer while the body is still open")), 3_000);
          stream.on("end", () => {
            clearTimeout(timer);
            // gRPC's code is in the headers or trailers, gRPC-Web's in a trailer frame of the body, a Connect error's in its JSON body.
            resolve({ status, code: code || (/grpc-status:\s*(\d+)/.exec(text) ?? /"code":"([a-z_]+)"/.exec(text))?.[1] || "" });
          });
          stream.on("error", reject);
        });
      } finally {
        session.close();
      }
    }
    // A gRPC frame declaring 100 bytes of which 2 are sent: the message never completes.
    const partialFrame = Buffer.from([0, 0, 0, 0, 100, 0x0a, 0x01]);

    it("a call without a valid token is unauthenticated while its body is still open, and a malformed body does not change it", async () => {
      for (const [contentType, body] of [
        ["application/grpc", partialFrame], ["application/grpc-web+proto", partialFrame], ["application/proto", Buffer.from([0x0a, 0xff])],
      ] as const) {
        for (const authorization of [undefined, "Bearer eat_not-a-token"]) {
          const headers = { "content-type": contentType, te: "trailers", ...(authorization ? { authorization } : {}) };
          const open = await h2Call(headers, body, false);
          expect([contentType, authorization, open], "with the body left open").toStrictEqual([contentType, authorization,
            contentType === "application/proto" ? { status: 401, code: "unauthenticated" } : { status: 200, code: "16" }]);
          // A complete but malformed body: still the token's answer, not invalid_argument.
          const malformed = await h2Call(headers, contentType === "application/proto" ? body : Buffer.from([0, 0, 0, 0, 2, 0x0a, 0xff]), true);
          expect(malformed.code).toBe(contentType === "application/proto" ? "unauthenticated" : "16");
        }
      }
      // Connect JSON, with a header it cannot read: the token is still checked first.
      const json = await fetch(svc.baseUrl + BATCH_GET_RPC, { method: "POST", headers: { "content-type": "application/json", "connect-timeout-ms": "abc" }, body: "{}" });
      expect([json.status, ((await json.json()) as { code: string }).code]).toStrictEqual([401, "unauthenticated"]);
    });
  });
});
