// End to end: one question, BatchGetDepartments(["111","0","nope","111"]), asked through every client the
// README names (REST, Connect JSON and binary over HTTP/1.1 and h2c, gRPC, gRPC-Web, grpc-js, buf curl),
// all on the one port of the real service. Every client must get the same answer, the same error numbers,
// and an x-request-id on every response.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import http from "node:http";
import http2 from "node:http2";
import { create, fromBinary, fromJson, toBinary, toJson } from "@bufbuild/protobuf";
import { base64Decode } from "@bufbuild/protobuf/wire";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BatchGetDepartmentsRequestSchema,
  BatchGetDepartmentsResponseSchema,
  DepartmentService,
  type BatchGetDepartmentsRequest,
  type BatchGetDepartmentsResponse,
} from "../../gen/enterprise_admin/v1/department_pb.js";
import { ErrorDetailSchema } from "../../gen/enterprise_admin/v1/errors_pb.js";
import {
  Health,
  HealthCheckRequestSchema,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
  type HealthCheckResponse,
} from "../../gen/grpc/health/v1/health_pb.js";
import { dialects } from "../helpers/databases.js";
import { decodeGoogleRpcStatus } from "../helpers/grpc-status.js";
import { startTestService, type TestService } from "../helpers/service.js";

const BUF = new URL("../../node_modules/.bin/buf", import.meta.url).pathname;
const REFUSED_CALLS_CLIENT = new URL("../helpers/refused-calls-client.ts", import.meta.url).pathname;
const execFileAsync = promisify(execFile);
const METHOD_PATH = "/enterprise_admin.v1.DepartmentService/BatchGetDepartments";
const IDS = ["111", "0", "nope", "111"];

/** The one answer, in the REST facade's `data` shape (proto field names, defaults included). */
const EXPECTED_DATA = {
  items: [
    { department_id: "111", parent_department_id: "110", name: "Platform", full_path: "Acme Corp/Engineering/Platform", depth: 2 },
    { department_id: "100", parent_department_id: "0", name: "Acme Corp", full_path: "Acme Corp", depth: 0 },
  ],
  not_found_department_ids: ["nope"],
};
const MISSING_TOKEN_MESSAGE = "access token missing: send Authorization: Bearer <access_token>";
const EMPTY_IDS_MESSAGE = "department_ids: must contain at least 1 item";
/** What a sane request id looks like (docs/api-rules.md): <= 128 printable characters. */
const SANE_REQUEST_ID = /^[\x21-\x7e]{1,128}$/;
const INSANE_REQUEST_ID = "x".repeat(200);

/** A proto message as the REST facade would print it: proto field names, zero values included. */
const restShape = (response: BatchGetDepartmentsResponse) =>
  toJson(BatchGetDepartmentsResponseSchema, response, { useProtoFieldName: true, alwaysEmitImplicit: true });

interface CallOptions {
  /** The whole Authorization header value; absent means no header. */
  authorization?: string;
  requestId?: string;
}

/** What one RPC client saw, in one shape for every client. */
interface Outcome {
  response?: BatchGetDepartmentsResponse;
  error?: {
    /** The RPC status code (Connect's Code and gRPC's status share the numbers). */
    rpcCode: number;
    /** The caller-facing message of the RPC error. */
    message: string;
    /** Every enterprise_admin.v1.ErrorDetail the error carried. */
    details: { code: number; message: string; requestId: string }[];
  };
  /** The x-request-id response header (gRPC trailers-only answers carry it in the trailers). */
  requestIdHeader: string | undefined;
}

interface RpcClient {
  call(departmentIds: string[], options?: CallOptions): Promise<Outcome>;
  close?(): void;
}

function requestHeaders({ authorization, requestId }: CallOptions): Headers {
  const headers = new Headers();
  if (authorization !== undefined) headers.set("authorization", authorization);
  if (requestId !== undefined) headers.set("x-request-id", requestId);
  return headers;
}

/** A @connectrpc/connect client over the given transport. */
function connectClient(transport: Transport): RpcClient {
  const client = createClient(DepartmentService, transport);
  return {
    async call(departmentIds, options = {}) {
      let header: Headers | undefined;
      try {
        const response = await client.batchGetDepartments({ departmentIds }, { headers: requestHeaders(options), onHeader: (h) => (header = h) });
        return { response, requestIdHeader: header?.get("x-request-id") ?? undefined };
      } catch (e) {
        const err = ConnectError.from(e);
        const details = err.findDetails(ErrorDetailSchema).map(({ code, message, requestId }) => ({ code, message, requestId }));
        // ConnectError.metadata holds the response headers (and the trailers, for gRPC and gRPC-Web).
        return { error: { rpcCode: err.code, message: err.rawMessage, details }, requestIdHeader: err.metadata.get("x-request-id") ?? undefined };
      }
    },
  };
}

/** @grpc/grpc-js as an independent gRPC client: its own HTTP/2 stack, serializers from the generated schemas. */
function grpcJsClient(port: number): RpcClient {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return {
    close: () => client.close(),
    call(departmentIds, options = {}) {
      const metadata = new grpc.Metadata();
      if (options.authorization !== undefined) metadata.set("authorization", options.authorization);
      if (options.requestId !== undefined) metadata.set("x-request-id", options.requestId);
      return new Promise<Outcome>((resolve, reject) => {
        let header: grpc.Metadata | undefined;
        const call = client.makeUnaryRequest(
          METHOD_PATH,
          (request: BatchGetDepartmentsRequest) => Buffer.from(toBinary(BatchGetDepartmentsRequestSchema, request)),
          (bytes: Buffer) => fromBinary(BatchGetDepartmentsResponseSchema, bytes),
          create(BatchGetDepartmentsRequestSchema, { departmentIds }),
          metadata,
          (err, response) => {
            const requestId = (m: grpc.Metadata | undefined) => m?.get("x-request-id")[0]?.toString();
            if (!err) return resolve({ response, requestIdHeader: requestId(header) });
            // The full status rides in the grpc-status-details-bin trailer as a google.rpc.Status.
            const [statusBin] = err.metadata.get("grpc-status-details-bin");
            if (!Buffer.isBuffer(statusBin)) return reject(new Error(`no grpc-status-details-bin trailer (${err.code} ${err.details})`));
            const status = decodeGoogleRpcStatus(statusBin);
            // grpc-message is percent-encoded as the gRPC spec says, so grpc-js reads ":" as ":".
            if (status.code !== err.code || status.message !== err.details) {
              return reject(new Error(`google.rpc.Status ${status.code} "${status.message}" disagrees with grpc-status ${err.code} "${err.details}"`));
            }
            resolve({ error: { rpcCode: err.code, message: status.message, details: status.details }, requestIdHeader: requestId(header) ?? requestId(err.metadata) });
          },
        );
        call.on("metadata", (m) => (header = m));
      });
    },
  };
}

function runBufCurl(args: string[]): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(BUF, ["curl", ...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error && typeof error.code !== "number") return reject(error);
      resolve({ exitCode: error ? Number(error.code) : 0, stdout, stderr });
    });
  });
}

const codeFromName = (name: string): number =>
  (Code as unknown as Record<string, number>)[name.replace(/(^|_)([a-z])/g, (_m, _u, c: string) => c.toUpperCase())]!;

/**
 * `buf curl` with the schema from server reflection only (no --schema). Reflection needs HTTP/2, so buf
 * curl speaks h2c for every protocol here (it says so itself: "--http2-prior-knowledge ... is implied for
 * URLs with an http scheme when server reflection is used"); the flag is passed explicitly.
 */
function bufCurlClient(baseUrl: string, protocol: "grpc" | "connect" | "grpcweb"): RpcClient {
  return {
    async call(departmentIds, options = {}) {
      const args = ["--http2-prior-knowledge", "--protocol", protocol, "--emit-defaults", "-v"];
      if (options.authorization !== undefined) args.push("-H", `Authorization: ${options.authorization}`);
      if (options.requestId !== undefined) args.push("-H", `X-Request-Id: ${options.requestId}`);
      args.push("-d", JSON.stringify({ department_ids: departmentIds }), `${baseUrl}${METHOD_PATH}`);
      const { exitCode, stdout, stderr } = await runBufCurl(args);
      // -v traces each stream as "buf: > (#N) POST /path" and "buf: < (#N) X-Request-Id: value"; the
      // reflection stream comes first, so find the stream number of the call itself.
      const stream = new RegExp(`^buf: > \\(#(\\d+)\\) POST ${METHOD_PATH}$`, "m").exec(stderr)?.[1];
      expect(stream, `buf curl -v shows the call's stream:\n${stderr}`).toBeDefined();
      const requestIdHeader = new RegExp(`^buf: < \\(#${stream}\\) X-Request-Id: (.*)$`, "im").exec(stderr)?.[1];
      if (exitCode === 0) {
        return { response: fromJson(BatchGetDepartmentsResponseSchema, JSON.parse(stdout)), requestIdHeader };
      }
      // An RPC error: the exit code is the RPC code << 3; the error is JSON on stderr, between -v lines.
      const json = JSON.parse(stderr.split("\n").filter((line) => !line.startsWith("buf: ")).join("\n")) as {
        code: string;
        message: string;
        details?: { type: string; value: string; debug?: unknown }[];
      };
      expect(exitCode, "buf curl exit code is the RPC code << 3").toBe(codeFromName(json.code) << 3);
      const details = (json.details ?? [])
        .filter((d) => d.type === ErrorDetailSchema.typeName)
        .map((d) => fromBinary(ErrorDetailSchema, base64Decode(d.value)))
        .map(({ code, message, requestId }) => ({ code, message, requestId }));
      return { error: { rpcCode: codeFromName(json.code), message: json.message, details }, requestIdHeader };
    },
  };
}

/** Every RPC client, by a name that says what it speaks. */
const RPC_CLIENTS = [
  "Connect JSON over HTTP/1.1",
  "Connect binary over HTTP/1.1",
  "Connect JSON over h2c",
  "Connect binary over h2c",
  "gRPC (connect-node createGrpcTransport, h2c)",
  "gRPC-Web over HTTP/1.1",
  "gRPC (@grpc/grpc-js)",
  "buf curl --protocol grpc",
  "buf curl --protocol connect (h2c: reflection needs HTTP/2)",
  "buf curl --protocol grpcweb (h2c: reflection needs HTTP/2)",
] as const;
type RpcClientName = (typeof RPC_CLIENTS)[number];

function makeRpcClients(baseUrl: string, port: number): Record<RpcClientName, RpcClient> {
  return {
    "Connect JSON over HTTP/1.1": connectClient(createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false })),
    "Connect binary over HTTP/1.1": connectClient(createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true })),
    "Connect JSON over h2c": connectClient(createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: false })),
    "Connect binary over h2c": connectClient(createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true })),
    // connect-node's gRPC transport is HTTP/2-only: it has no httpVersion option.
    "gRPC (connect-node createGrpcTransport, h2c)": connectClient(createGrpcTransport({ baseUrl })),
    "gRPC-Web over HTTP/1.1": connectClient(createGrpcWebTransport({ baseUrl, httpVersion: "1.1" })),
    "gRPC (@grpc/grpc-js)": grpcJsClient(port),
    "buf curl --protocol grpc": bufCurlClient(baseUrl, "grpc"),
    "buf curl --protocol connect (h2c: reflection needs HTTP/2)": bufCurlClient(baseUrl, "connect"),
    "buf curl --protocol grpcweb (h2c: reflection needs HTTP/2)": bufCurlClient(baseUrl, "grpcweb"),
  };
}

/** A plain fetch (HTTP/1.1) to the REST facade. */
async function restBatchGet(baseUrl: string, body: unknown, options: CallOptions = {}) {
  const headers = requestHeaders(options);
  headers.set("content-type", "application/json");
  const res = await fetch(`${baseUrl}/openapi/v1/departments/batch-get`, { method: "POST", headers, body: JSON.stringify(body) });
  return { status: res.status, contentType: res.headers.get("content-type"), requestIdHeader: res.headers.get("x-request-id"), body: (await res.json()) as Record<string, unknown> };
}

/** One request over a raw node:http2 client session (h2c with prior knowledge). */
function h2Get(baseUrl: string, path: string): Promise<{ status: number; requestIdHeader: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(baseUrl);
    session.on("error", reject);
    const stream = session.request({ ":method": "GET", ":path": path });
    let status = 0;
    let requestIdHeader: string | undefined;
    let body = "";
    stream.on("response", (headers) => {
      status = Number(headers[":status"]);
      requestIdHeader = headers["x-request-id"] as string | undefined;
    });
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => (body += chunk));
    stream.on("end", () => {
      session.close();
      resolve({ status, requestIdHeader, body });
    });
    stream.on("error", (error) => {
      session.destroy();
      reject(error);
    });
  });
}

describe.each(dialects)("every transport on one port (%s)", (dialect) => {
  let svc: TestService;
  let bearer: string;
  let clients: Record<RpcClientName, RpcClient>;

  beforeAll(async () => {
    svc = await startTestService(dialect);
    bearer = `Bearer ${await svc.token(["departments:read"])}`;
    clients = makeRpcClients(svc.baseUrl, svc.port);
  });

  afterAll(async () => {
    for (const client of Object.values(clients ?? {})) client.close?.();
    await svc?.close();
  });

  describe("the same answer for BatchGetDepartments([111, 0, nope, 111])", () => {
    it("REST POST /openapi/v1/departments/batch-get: the success envelope, items 111 then root 100, not_found [nope], request_id = x-request-id", async () => {
      const res = await restBatchGet(svc.baseUrl, { department_ids: IDS }, { authorization: bearer });
      expect(res.status).toBe(200);
      expect(res.contentType).toMatch(/^application\/json\b/);
      expect(res.requestIdHeader).toMatch(SANE_REQUEST_ID);
      expect(res.body).toEqual({ code: 0, message: "success", request_id: res.requestIdHeader, data: EXPECTED_DATA });
    });

    it.each(RPC_CLIENTS)("%s: items 111 then root 100, not_found [nope], and an x-request-id header", async (name) => {
      const outcome = await clients[name].call(IDS, { authorization: bearer });
      expect(outcome.error).toBeUndefined();
      expect(restShape(outcome.response!)).toEqual(EXPECTED_DATA);
      expect(outcome.requestIdHeader).toMatch(SANE_REQUEST_ID);
    });
  });

  describe("x-request-id: a caller's sane id is kept, an insane one replaced", () => {
    it("REST keeps a sane id (128 printable characters, the limit) in the header and the envelope", async () => {
      const sane = `rest-${"r".repeat(123)}`;
      expect(sane).toHaveLength(128);
      const res = await restBatchGet(svc.baseUrl, { department_ids: IDS }, { authorization: bearer, requestId: sane });
      expect(res.status).toBe(200);
      expect(res.requestIdHeader).toBe(sane);
      expect(res.body.request_id).toBe(sane);
    });

    it("REST replaces a 200-character id with a fresh sane one, in the header and the envelope alike", async () => {
      const res = await restBatchGet(svc.baseUrl, { department_ids: IDS }, { authorization: bearer, requestId: INSANE_REQUEST_ID });
      expect(res.status).toBe(200);
      expect(res.requestIdHeader).toMatch(SANE_REQUEST_ID);
      expect(res.requestIdHeader).not.toBe(INSANE_REQUEST_ID);
      expect(res.body.request_id).toBe(res.requestIdHeader);
    });

    it.each(RPC_CLIENTS)("%s: echoes a sane id and replaces a 200-character one", async (name) => {
      const sane = `e2e-${name.replace(/[^A-Za-z0-9]+/g, "-")}-${Date.now()}`;
      const kept = await clients[name].call(IDS, { authorization: bearer, requestId: sane });
      expect(kept.error).toBeUndefined();
      expect(kept.requestIdHeader).toBe(sane);

      const replaced = await clients[name].call(IDS, { authorization: bearer, requestId: INSANE_REQUEST_ID });
      expect(replaced.error).toBeUndefined();
      expect(replaced.requestIdHeader).toMatch(SANE_REQUEST_ID);
      expect(replaced.requestIdHeader).not.toBe(INSANE_REQUEST_ID);
    });
  });

  describe("no access token: 1002 on every transport", () => {
    it("REST answers 401 with {code:1002, message, request_id, data:null}", async () => {
      const res = await restBatchGet(svc.baseUrl, { department_ids: IDS });
      expect(res.status).toBe(401);
      expect(res.requestIdHeader).toMatch(SANE_REQUEST_ID);
      expect(res.body).toEqual({ code: 1002, message: MISSING_TOKEN_MESSAGE, request_id: res.requestIdHeader, data: null });
    });

    it.each(RPC_CLIENTS)("%s: unauthenticated with ErrorDetail{code:1002, request_id = x-request-id}", async (name) => {
      const outcome = await clients[name].call(IDS, { requestId: `no-token-${Date.now()}` });
      expect(outcome.response).toBeUndefined();
      expect(outcome.requestIdHeader).toMatch(/^no-token-\d+$/);
      expect(outcome.error).toEqual({
        rpcCode: Code.Unauthenticated,
        message: MISSING_TOKEN_MESSAGE,
        details: [{ code: 1002, message: MISSING_TOKEN_MESSAGE, requestId: outcome.requestIdHeader }],
      });
    });
  });

  describe("department_ids empty: 4001 on every transport", () => {
    it("REST answers 400 with {code:4001, message naming department_ids, request_id, data:null}", async () => {
      const res = await restBatchGet(svc.baseUrl, { department_ids: [] }, { authorization: bearer });
      expect(res.status).toBe(400);
      expect(res.requestIdHeader).toMatch(SANE_REQUEST_ID);
      expect(res.body).toEqual({ code: 4001, message: EMPTY_IDS_MESSAGE, request_id: res.requestIdHeader, data: null });
    });

    it.each(RPC_CLIENTS)("%s: invalid_argument with ErrorDetail{code:4001} and the REST message", async (name) => {
      const outcome = await clients[name].call([], { authorization: bearer });
      expect(outcome.response).toBeUndefined();
      expect(outcome.requestIdHeader).toMatch(SANE_REQUEST_ID);
      expect(outcome.error).toEqual({
        rpcCode: Code.InvalidArgument,
        message: EMPTY_IDS_MESSAGE,
        details: [{ code: 4001, message: EMPTY_IDS_MESSAGE, requestId: outcome.requestIdHeader }],
      });
    });
  });

  it("answers Connect's GET form, PUT and DELETE with 405, Allow: POST and an empty body: every RPC path takes POST", async () => {
    const message = encodeURIComponent(JSON.stringify({ department_ids: IDS }));
    for (const [method, query] of [["GET", `?connect=v1&encoding=json&message=${message}`], ["PUT", ""], ["DELETE", ""]] as const) {
      const res = await fetch(`${svc.baseUrl}${METHOD_PATH}${query}`, { method, headers: { authorization: bearer } });
      expect([method, res.status, res.headers.get("allow"), await res.text()]).toStrictEqual([method, 405, "POST", ""]);
    }
  });

  it("a procedure the server does not serve is unimplemented with the ErrorDetail 4004, in the caller's protocol", async () => {
    const path = "/enterprise_admin.v1.DepartmentService/Nope";
    const message = `no route for POST ${path}`;
    // grpc-js reads the status from headers alone (trailers-only), the message as sent.
    const client = new grpc.Client(`127.0.0.1:${svc.port}`, grpc.credentials.createInsecure());
    const error = await new Promise<grpc.ServiceError>((resolve, reject) => {
      client.makeUnaryRequest(path, (b: Buffer) => b, (b: Buffer) => b, Buffer.alloc(0), new grpc.Metadata(), (err) => {
        client.close();
        if (err) resolve(err);
        else reject(new Error("expected an error"));
      });
    });
    expect([error.code, error.details]).toStrictEqual([grpc.status.UNIMPLEMENTED, message]);
    const status = decodeGoogleRpcStatus(error.metadata.get("grpc-status-details-bin")[0] as Buffer);
    expect(status.details.map((d) => [d.code, d.message])).toStrictEqual([[4004, message]]);
    // gRPC-Web: the trailer message.
    const web = await fetch(`${svc.baseUrl}${path}`, { method: "POST", headers: { "content-type": "application/grpc-web+proto" }, body: new Uint8Array(5) });
    const frame = Buffer.from(await web.arrayBuffer());
    expect([web.status, frame[0]]).toStrictEqual([200, 0x80]);
    expect(frame.subarray(5).toString()).toMatch(/^grpc-status: 12\r\n/m);
    // Connect (JSON): its error body, with the detail.
    const connect = await fetch(`${svc.baseUrl}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(connect.status).toBe(501);
    const body = await connect.json() as { code: string; message: string; details: { debug: { code: number } }[] };
    expect([body.code, body.message, body.details[0]!.debug.code]).toStrictEqual(["unimplemented", message, 4004]);
    // Anything else on a path of no route is the REST envelope.
    const plain = await fetch(`${svc.baseUrl}/no/such/path`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect([plain.status, (await plain.json() as { code: number }).code]).toStrictEqual([404, 4004]);
  });

  describe("health, and HTTP/1.1 and h2c on the same port", () => {
    it("GET /healthz over HTTP/1.1 answers 200 {\"status\":\"ok\"} with an x-request-id", async () => {
      const res = await fetch(`${svc.baseUrl}/healthz`);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-request-id")).toMatch(SANE_REQUEST_ID);
      expect(await res.json()).toEqual({ status: "ok" });
    });

    it("GET /healthz over h2c (raw http2.connect, prior knowledge) on the same port answers the same", async () => {
      const res = await h2Get(svc.baseUrl, "/healthz");
      expect(res.status).toBe(200);
      expect(res.requestIdHeader).toMatch(SANE_REQUEST_ID);
      expect(JSON.parse(res.body)).toEqual({ status: "ok" });
    });

    it("grpc.health.v1.Health/Check over the full server answers SERVING to grpc-js, overall and per service", async () => {
      const client = new grpc.Client(`127.0.0.1:${svc.port}`, grpc.credentials.createInsecure());
      try {
        const check = (service: string) =>
          new Promise<HealthCheckResponse>((resolve, reject) =>
            client.makeUnaryRequest(
              "/grpc.health.v1.Health/Check",
              (req: { service: string }) => Buffer.from(toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema, req))),
              (bytes: Buffer) => fromBinary(HealthCheckResponseSchema, bytes),
              { service },
              (err, res) => (err || !res ? reject(err) : resolve(res)),
            ),
          );
        expect((await check("")).status).toBe(ServingStatus.SERVING);
        expect((await check(DepartmentService.typeName)).status).toBe(ServingStatus.SERVING);
      } finally {
        client.close();
      }
    });

    it("a deadline header that is no deadline is 4001 naming it, with the ErrorDetail, on Connect JSON, Connect binary, gRPC-Web and gRPC, and on REST", async () => {
      const message = toBinary(BatchGetDepartmentsRequestSchema, create(BatchGetDepartmentsRequestSchema, { departmentIds: ["111"] }));
      const envelope = Buffer.concat([Buffer.from([0, 0, 0, 0, message.length]), message]);
      const post = async (headers: Record<string, string>, body: Uint8Array | string) => {
        const res = await fetch(svc.baseUrl + METHOD_PATH, { method: "POST", headers: { authorization: bearer, ...headers }, body });
        return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
      };
      const connectMessage = "connect-timeout-ms: expected a whole number of milliseconds (at most 10 digits)";
      for (const [contentType, body] of [["application/json", JSON.stringify({ department_ids: ["111"] })], ["application/proto", message]] as const) {
        const reply = await post({ "content-type": contentType, "connect-timeout-ms": "abc" }, body);
        const error = JSON.parse(reply.bytes.toString()) as { code: string; message: string; details?: { debug?: { code?: number } }[] };
        expect([contentType, reply.status, error.code, error.message, error.details?.[0]?.debug?.code]).toStrictEqual([contentType, 400, "invalid_argument", connectMessage, 4001]);
      }
      const rest = await fetch(`${svc.baseUrl}/openapi/v1/departments/batch-get`, { method: "POST",
        headers: { authorization: bearer, "content-type": "application/json", "connect-timeout-ms": "abc" }, body: JSON.stringify({ department_ids: ["111"] }) });
      expect([rest.status, await rest.json()]).toStrictEqual([400, expect.objectContaining({ code: 4001, message: connectMessage })]);
      // Each protocol reads its own header: a grpc-timeout on Connect is not a deadline there, neither honoured nor refused.
      expect((await post({ "content-type": "application/proto", "grpc-timeout": "abc" }, message)).status).toBe(200);
      const grpcMessage = "grpc-timeout: expected at most 8 digits and a unit (H, M, S, m, u or n), e.g. 2500m";
      const web = await post({ "content-type": "application/grpc-web+proto", "x-grpc-web": "1", "grpc-timeout": "abc" }, envelope);
      const webTrailer = (web.headers.get("grpc-status") ? [...web.headers].map(([k, v]) => `${k}: ${v}`).join("\r\n") : web.bytes.subarray(5).toString("latin1"));
      expect(webTrailer).toContain("grpc-status: 3");
      expect(decodeURIComponent(webTrailer.split("grpc-message: ")[1]!.split("\r\n")[0]!)).toBe(grpcMessage);
      const trailers = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
        const session = http2.connect(svc.baseUrl);
        session.on("error", reject);
        const stream = session.request({ ":method": "POST", ":path": METHOD_PATH, "content-type": "application/grpc", te: "trailers", "grpc-timeout": "abc", authorization: bearer });
        let seen: http2.IncomingHttpHeaders = {};
        stream.on("response", (headers) => (seen = { ...seen, ...headers }));
        stream.on("trailers", (headers) => (seen = { ...seen, ...headers }));
        stream.on("data", () => {});
        stream.on("end", () => (session.close(), resolve(seen)));
        stream.end(envelope);
      });
      expect([trailers["grpc-status"], decodeURIComponent(String(trailers["grpc-message"]))]).toStrictEqual(["3", grpcMessage]);
      const status = decodeGoogleRpcStatus(Buffer.from(String(trailers["grpc-status-details-bin"]), "base64"));
      expect(status.details.map((d) => d.code)).toStrictEqual([4001]);
    });

    it("a call without a token is 401 with its ErrorDetail whatever its body's headers: a length past 1 MiB, a coding the service lacks, a bad deadline", async () => {
      const answerTo = (headers: Record<string, string | number>, part: Buffer) => new Promise<{ status: number; body: string }>((resolve, reject) => {
        const request = http.request({ host: "127.0.0.1", port: svc.port, method: "POST", path: METHOD_PATH, headers });
        request.on("error", reject);
        request.on("response", (res) => {
          let body = "";
          res.setEncoding("utf8").on("data", (chunk: string) => (body += chunk)).on("end", () => resolve({ status: res.statusCode!, body }));
        });
        request.write(part); // the rest never comes: the refusal must not wait for it, nor for connect-es's own limits
      });
      const unauthenticated = { code: "unauthenticated", message: MISSING_TOKEN_MESSAGE, details: [expect.objectContaining({ debug: expect.objectContaining({ code: 1002 }) })] };
      // It was connect-es's 429 "message size 2200000 is larger than configured readMaxBytes", with no detail, logged as 1002.
      const large = await answerTo({ "content-type": "application/proto", "content-length": 2_200_000 }, Buffer.alloc(64 * 1024));
      expect([large.status, JSON.parse(large.body)]).toStrictEqual([401, unauthenticated]);
      const zstd = await answerTo({ "content-type": "application/proto", "content-encoding": "zstd", "content-length": 3 }, Buffer.from([1, 2, 3]));
      expect([zstd.status, JSON.parse(zstd.body)]).toStrictEqual([401, unauthenticated]);
      const timeout = await answerTo({ "content-type": "application/proto", "connect-timeout-ms": "soon", "content-length": 0 }, Buffer.alloc(0));
      expect([timeout.status, JSON.parse(timeout.body)]).toStrictEqual([401, unauthenticated]);
      // A body that stalls, under a deadline shorter than it would wait: the refusal is not held for the body.
      const stalled = await answerTo({ "content-type": "application/proto", "connect-timeout-ms": "300", "content-length": 100 }, Buffer.alloc(0));
      expect([stalled.status, JSON.parse(stalled.body)]).toStrictEqual([401, unauthenticated]);
    });

    it("a refused call over HTTP/1.1 closes in stages: connect-node clients, still writing their body, read 401 or 403, never 'write EPIPE'", async () => {
      const noRead = `Bearer ${await svc.token(["statistics:read"])}`;
      // It was a race, a few calls in thirty: connect-node writes its body after the headers, and the refusal closed the connection.
      const { stdout } = await execFileAsync(process.execPath, ["--import", "tsx", REFUSED_CALLS_CLIENT, svc.baseUrl, "40", "", noRead, bearer]);
      const expected: Record<string, number> = {};
      for (const name of ["Connect JSON", "Connect binary", "gRPC-Web"]) {
        Object.assign(expected, { [`${name} 0: Unauthenticated 1002`]: 40, [`${name} 1: PermissionDenied 30017`]: 40, [`${name} 2: ok`]: 40 });
      }
      expect(JSON.parse(stdout)).toStrictEqual(expected);
    });

    it("grpc.health.v1.Health/Check answers SERVING over Connect (HTTP/1.1) and gRPC (h2c) too", async () => {
      const overConnect = createClient(Health, createConnectTransport({ baseUrl: svc.baseUrl, httpVersion: "1.1" }));
      expect((await overConnect.check({ service: "" })).status).toBe(ServingStatus.SERVING);
      const overGrpc = createClient(Health, createGrpcTransport({ baseUrl: svc.baseUrl }));
      expect((await overGrpc.check({ service: DepartmentService.typeName })).status).toBe(ServingStatus.SERVING);
    });
  });
});
