// End to end: rate limits (429 with Retry-After, per app, RATE_LIMIT_RPS/RATE_LIMIT_BURST).
// Business calls are counted per app (per enterprise for `token create` tokens) on every transport; the
// token exchange is counted per app_id and per client address, before the secret is checked.
import http from "node:http";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BatchGetDepartmentsRequestSchema,
  BatchGetDepartmentsResponseSchema,
  DepartmentService,
} from "../../gen/enterprise_admin/v1/department_pb.js";
import { ErrorDetailSchema } from "../../gen/enterprise_admin/v1/errors_pb.js";
import { dialects } from "../helpers/databases.js";
import { decodeGoogleRpcStatus } from "../helpers/grpc-status.js";
import { startTestService, type TestService } from "../helpers/service.js";

const BATCH_GET = "/openapi/v1/departments/batch-get";
const TOKEN = "/openapi/v1/auth/token";
const RATE_LIMITED = 64290;
/** One call a second regained, two at once: the third quick call is refused. */
const CALL_LIMITS = { RATE_LIMIT_RPS: "1", RATE_LIMIT_BURST: "2", TOKEN_EXCHANGE_LIMIT_PER_APP_ID: "0", TOKEN_EXCHANGE_LIMIT_PER_ADDRESS: "0" };
/** Two exchanges per app_id and three per address a minute; business calls unlimited. */
const EXCHANGE_LIMITS = { RATE_LIMIT_RPS: "0", RATE_LIMIT_BURST: "0", TOKEN_EXCHANGE_LIMIT_PER_APP_ID: "2", TOKEN_EXCHANGE_LIMIT_PER_ADDRESS: "3" };

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  json: any;
}

/** A JSON POST over HTTP/1.1, optionally from another loopback address (Linux answers all of 127/8). */
function post(port: number, path: string, body: unknown, headers: Record<string, string> = {}, localAddress = "127.0.0.1"): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path, method: "POST", localAddress, headers: { "content-type": "application/json", ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, json: JSON.parse(Buffer.concat(chunks).toString()) }));
    });
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

const retryAfterSeconds = (value: string | null | undefined) => {
  expect(value, "Retry-After").toMatch(/^[1-9]\d*$/);
  return Number(value);
};

/** BatchGetDepartments through @grpc/grpc-js; resolves with the error (or null) it saw. */
function grpcJsBatchGet(port: number, token: string): Promise<grpc.ServiceError | null> {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${token}`);
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      "/enterprise_admin.v1.DepartmentService/BatchGetDepartments",
      (request) => Buffer.from(toBinary(BatchGetDepartmentsRequestSchema, request)),
      (bytes: Buffer) => fromBinary(BatchGetDepartmentsResponseSchema, bytes),
      create(BatchGetDepartmentsRequestSchema, { departmentIds: ["110"] }),
      metadata,
      (err) => {
        client.close();
        resolve(err);
      },
    );
  });
}

describe.each(dialects)("rate limits (%s)", (dialect) => {
  let calls: TestService;
  let exchanges: TestService;

  beforeAll(async () => {
    [calls, exchanges] = await Promise.all([
      startTestService(dialect, CALL_LIMITS),
      startTestService(dialect, EXCHANGE_LIMITS),
    ]);
  });

  afterAll(async () => {
    await calls?.close();
    await exchanges?.close();
  });

  /** A fresh app of the enterprise and an access token it obtained: a bucket of its own. */
  async function appToken(svc: TestService, enterpriseId = "acme"): Promise<string> {
    const app = await svc.access.createApp(enterpriseId, ["departments:read"], "limited");
    const reply = await post(svc.port, TOKEN, { app_id: app.app_id, app_secret: app.app_secret });
    expect(reply.status).toBe(200);
    return reply.json.data.access_token;
  }

  const batchGet = (svc: TestService, token: string) =>
    post(svc.port, BATCH_GET, { department_ids: ["110"] }, { authorization: `Bearer ${token}` });

  describe("business calls, per app", () => {
    it("REST: the call past the burst gets 429 with code 64290 and Retry-After in seconds", async () => {
      const token = await appToken(calls);
      expect((await batchGet(calls, token)).status).toBe(200);
      expect((await batchGet(calls, token)).status).toBe(200);
      const refused = await batchGet(calls, token);
      expect(refused.status).toBe(429);
      expect(refused.json).toStrictEqual({ code: RATE_LIMITED, message: expect.stringMatching(/^rate limited: more than 1 call a second \(burst 2\) for this app; retry after 1 s$/), request_id: refused.headers["x-request-id"], data: null });
      expect(retryAfterSeconds(refused.headers["retry-after"] as string)).toBe(1);
    });

    it("the bucket refills: after Retry-After the app is served again", async () => {
      const token = await appToken(calls);
      await batchGet(calls, token);
      await batchGet(calls, token);
      const refused = await batchGet(calls, token);
      expect(refused.status).toBe(429);
      await new Promise((r) => setTimeout(r, retryAfterSeconds(refused.headers["retry-after"] as string) * 1000));
      expect((await batchGet(calls, token)).status).toBe(200);
    });

    it("another app of the same enterprise keeps its own bucket", async () => {
      const first = await appToken(calls);
      const second = await appToken(calls);
      for (let i = 0; i < 3; i++) await batchGet(calls, first);
      expect((await batchGet(calls, first)).status).toBe(429);
      expect((await batchGet(calls, second)).status).toBe(200);
    });

    it("tokens made by `token create` share one bucket per enterprise", async () => {
      const one = await calls.token(["departments:read"], "globex");
      const two = await calls.token(["departments:read"], "globex");
      const other = await calls.token(["departments:read"], "acme");
      expect((await batchGet(calls, one)).status).toBe(200);
      expect((await batchGet(calls, two)).status).toBe(200);
      const refused = await batchGet(calls, one);
      expect(refused.status).toBe(429);
      expect(refused.json.message).toMatch(/^rate limited: more than 1 call a second \(burst 2\) for this enterprise's tokens made by `token create`; retry after 1 s$/);
      expect((await batchGet(calls, two)).status).toBe(429);
      expect((await batchGet(calls, other)).status).toBe(200);
    });

    it.each([
      ["Connect JSON", false],
      ["Connect binary", true],
    ])("%s: resource_exhausted with ErrorDetail{code:64290} and a Retry-After header", async (_name, useBinaryFormat) => {
      const token = await appToken(calls);
      const client = createClient(DepartmentService, createConnectTransport({ baseUrl: calls.baseUrl, httpVersion: "1.1", useBinaryFormat }));
      const headers = { authorization: `Bearer ${token}` };
      await client.batchGetDepartments({ departmentIds: ["110"] }, { headers });
      await client.batchGetDepartments({ departmentIds: ["110"] }, { headers });
      const error = await client.batchGetDepartments({ departmentIds: ["110"] }, { headers }).then(() => undefined, ConnectError.from);
      expect(error?.code).toBe(Code.ResourceExhausted);
      expect(error!.findDetails(ErrorDetailSchema).map((d) => d.code)).toStrictEqual([RATE_LIMITED]);
      expect(retryAfterSeconds(error!.metadata.get("retry-after"))).toBe(1);
    });

    it("gRPC (@grpc/grpc-js): RESOURCE_EXHAUSTED with ErrorDetail{code:64290} and retry-after metadata", async () => {
      const token = await appToken(calls);
      expect(await grpcJsBatchGet(calls.port, token)).toBeNull();
      expect(await grpcJsBatchGet(calls.port, token)).toBeNull();
      const error = await grpcJsBatchGet(calls.port, token);
      expect(error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      const [statusBin] = error!.metadata.get("grpc-status-details-bin");
      expect(decodeGoogleRpcStatus(statusBin as Buffer).details.map((d) => d.code)).toStrictEqual([RATE_LIMITED]);
      expect(retryAfterSeconds(error!.metadata.get("retry-after")[0]?.toString())).toBe(1);
    });

    it("RATE_LIMIT_RPS=0 turns the call limit off", async () => {
      const token = await exchanges.token(["departments:read"]);
      for (let i = 0; i < 20; i++) expect((await batchGet(exchanges, token)).status).toBe(200);
    });
  });

  describe("the token exchange, per app_id and per client address", () => {
    it("only failed exchanges count against the app_id: past its limit even the right secret gets 429", async () => {
      const app = await exchanges.access.createApp("acme", ["departments:read"], "guessed");
      const exchange = (appSecret: string, from: string) => post(exchanges.port, TOKEN, { app_id: app.app_id, app_secret: appSecret }, {}, from);
      for (const from of ["127.0.0.2", "127.0.0.3", "127.0.0.6"]) expect((await exchange(app.app_secret, from)).status).toBe(200);
      for (const from of ["127.0.0.7", "127.0.0.8"]) expect((await exchange("eas_guess", from)).json.code).toBe(1001);
      const refused = await exchange(app.app_secret, "127.0.0.9");
      expect(refused.status).toBe(429);
      expect(refused.json.code).toBe(RATE_LIMITED);
      expect(refused.json.message).toMatch(/^rate limited: more than 2 failed token requests a minute for this app_id; retry after \d+ s$/);
      // Two a minute: the next token is about 30 s away.
      expect(retryAfterSeconds(refused.headers["retry-after"] as string)).toBeGreaterThan(25);
      expect(Number(refused.headers["retry-after"])).toBeLessThanOrEqual(30);
      // The access log names the address of a throttled call, so it can be traced.
      const logged = exchanges.logs.map((line) => JSON.parse(line)).find((line) => line.request_id === refused.headers["x-request-id"]);
      expect(logged).toMatchObject({ code: RATE_LIMITED, status: 429, client_address: "127.0.0.9" });
    });

    it("past the address's limit every app_id is refused from that address, and only from it", async () => {
      const from = "127.0.0.4";
      for (let i = 0; i < 3; i++) {
        expect((await post(exchanges.port, TOKEN, { app_id: `app_unknown${i}`, app_secret: "eas_guess" }, {}, from)).status).toBe(401);
      }
      const app = await exchanges.access.createApp("acme", ["departments:read"], "neighbour");
      const refused = await post(exchanges.port, TOKEN, { app_id: app.app_id, app_secret: app.app_secret }, {}, from);
      expect(refused.status).toBe(429);
      expect(refused.json.message).toMatch(/^rate limited: more than 3 token requests a minute from this address; retry after \d+ s$/);
      expect(retryAfterSeconds(refused.headers["retry-after"] as string)).toBeLessThanOrEqual(20);
      expect((await post(exchanges.port, TOKEN, { app_id: app.app_id, app_secret: app.app_secret }, {}, "127.0.0.5")).status).toBe(200);
    });
  });
});
