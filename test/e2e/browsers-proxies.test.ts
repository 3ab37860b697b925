// End to end: what browsers on other origins and proxies between see, over a real port. CORS is off
// unless CORS_ALLOWED_ORIGINS lists origins: then preflights to Connect, gRPC-Web and REST paths are
// answered 204 for the listed origins only, and answers to them are readable (Access-Control-Allow-Origin,
// the trailers and x-request-id exposed). Whole bodies over 1 KB and the export stream are gzipped when
// the caller accepts gzip, and decompress to what an identity answer carries. A valid W3C traceparent
// is logged beside the request id; an invalid one is not logged at all.
import http from "node:http";
import { gunzipSync } from "node:zlib";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DepartmentService } from "../../gen/enterprise_admin/v1/department_pb.js";
import { dialects, type DialectName } from "../helpers/databases.js";
import { accessLines } from "../helpers/hostile-clients.js";
import { startTestService, type TestService } from "../helpers/service.js";

const ALLOWED = "https://admin.example.com";
const ALSO_ALLOWED = "http://localhost:5173";
const DISALLOWED = "https://evil.example";
const CONNECT_PATH = "/enterprise_admin.v1.DepartmentService/BatchGetDepartments";
const REST_ITEM_PATH = "/api/v1/environment_configs/some-id";
const SUPPORTED_VERSIONS = "/api/v1/environment_configs/supported_versions";
const USAGE_QUERY = "/openapi/v1/statistics/user-model-usage";
const BATCH_RECORD = "/openapi/v1/usage/events/batch-record";
const EXPORT = "/openapi/v1/statistics/usage-export";
const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID = "00f067aa0ba902b7";
const TRACEPARENT = `00-${TRACE_ID}-${PARENT_ID}-01`;

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body as it came over the wire (not decompressed). */
  body: Buffer;
}

/** One HTTP/1.1 request with exactly the headers given (fetch would add Accept-Encoding and decompress). */
function send(baseUrl: string, path: string, { method = "GET", headers = {}, body }: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${baseUrl}${path}`, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

const corsHeaderNames = (reply: Reply) => Object.keys(reply.headers).filter((name) => name.startsWith("access-control-"));
const listOf = (value: string | string[] | undefined) => String(value ?? "").split(",").map((s) => s.trim().toLowerCase()).filter(Boolean);

/** Preflights as browsers send them before a Connect, a gRPC-Web and a REST call. */
const PREFLIGHTS = [
  { kind: "Connect", path: CONNECT_PATH, method: "POST", requestHeaders: "authorization,connect-protocol-version,content-type" },
  { kind: "gRPC-Web", path: CONNECT_PATH, method: "POST", requestHeaders: "authorization,content-type,x-grpc-web,x-user-agent,grpc-timeout" },
  { kind: "REST", path: REST_ITEM_PATH, method: "PATCH", requestHeaders: "authorization,content-type,x-request-id,traceparent" },
];

function preflight(baseUrl: string, path: string, origin: string, method: string, requestHeaders: string): Promise<Reply> {
  return send(baseUrl, path, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": method, "access-control-request-headers": requestHeaders },
  });
}

describe.each(dialects)("CORS on, for listed origins, on %s", (dialect: DialectName) => {
  let svc: TestService;
  let token: string;

  beforeAll(async () => {
    svc = await startTestService(dialect, { CORS_ALLOWED_ORIGINS: `${ALLOWED}, ${ALSO_ALLOWED}` });
    token = await svc.token();
  });
  afterAll(async () => {
    await svc?.close();
  });

  it.each(PREFLIGHTS)("a $kind preflight from a listed origin gets 204 allowing its method and headers", async ({ path, method, requestHeaders }) => {
    for (const origin of [ALLOWED, ALSO_ALLOWED]) {
      const reply = await preflight(svc.baseUrl, path, origin, method, requestHeaders);
      expect(reply.status).toBe(204);
      expect(reply.headers["access-control-allow-origin"]).toBe(origin);
      expect(listOf(reply.headers["access-control-allow-methods"])).toContain(method.toLowerCase());
      expect(listOf(reply.headers["access-control-allow-headers"])).toEqual(expect.arrayContaining(listOf(requestHeaders)));
      expect(reply.headers["access-control-max-age"]).toBe("7200");
      expect(reply.headers["access-control-allow-credentials"]).toBeUndefined();
      expect(listOf(reply.headers.vary)).toContain("origin");
      expect(reply.body.length).toBe(0);
    }
  });

  it.each(PREFLIGHTS)("a $kind preflight from another origin gets no CORS header", async ({ path, method, requestHeaders }) => {
    const reply = await preflight(svc.baseUrl, path, DISALLOWED, method, requestHeaders);
    expect(reply.status).toBe(204);
    expect(corsHeaderNames(reply)).toEqual([]);
    expect(listOf(reply.headers.vary)).toContain("origin");
  });

  it("a REST answer to a listed origin is readable by it, with x-request-id and Retry-After exposed", async () => {
    const reply = await send(svc.baseUrl, SUPPORTED_VERSIONS, { headers: { origin: ALLOWED, authorization: `Bearer ${token}` } });
    expect(reply.status).toBe(200);
    expect(reply.headers["access-control-allow-origin"]).toBe(ALLOWED);
    expect(listOf(reply.headers["access-control-expose-headers"])).toEqual(expect.arrayContaining(["x-request-id", "retry-after", "grpc-status", "grpc-message"]));
    expect(listOf(reply.headers.vary)).toContain("origin");
    // An error answer is readable too: the page can show the envelope's message.
    const refused = await send(svc.baseUrl, SUPPORTED_VERSIONS, { headers: { origin: ALLOWED } });
    expect(refused.status).toBe(401);
    expect(refused.headers["access-control-allow-origin"]).toBe(ALLOWED);
  });

  it("a gRPC-Web call from a listed origin gets Access-Control-Allow-Origin and the exposed trailers; another origin's gets none", async () => {
    const client = createClient(DepartmentService, createGrpcWebTransport({ baseUrl: svc.baseUrl, httpVersion: "1.1" }));
    const seen = new Map<string, Headers>();
    for (const origin of [ALLOWED, DISALLOWED]) {
      const response = await client.batchGetDepartments({ departmentIds: ["111"] }, {
        headers: { origin, authorization: `Bearer ${token}` },
        onHeader: (headers) => seen.set(origin, headers),
      });
      // The server answers either way: keeping the answer from a page is the browser's part.
      expect(response.items.map((item) => item.departmentId)).toEqual(["111"]);
    }
    expect(seen.get(ALLOWED)!.get("access-control-allow-origin")).toBe(ALLOWED);
    expect(listOf(seen.get(ALLOWED)!.get("access-control-expose-headers") ?? "")).toEqual(expect.arrayContaining(["grpc-status", "grpc-message", "grpc-status-details-bin", "x-request-id"]));
    expect(seen.get(DISALLOWED)!.get("access-control-allow-origin")).toBeNull();
    expect(seen.get(DISALLOWED)!.get("access-control-expose-headers")).toBeNull();
  });

  it("the console and the health check, same-origin pages, get no CORS header", async () => {
    for (const path of ["/console", "/healthz"]) {
      const reply = await send(svc.baseUrl, path, { headers: { origin: ALLOWED } });
      expect(reply.status).toBe(200);
      expect(corsHeaderNames(reply)).toEqual([]);
    }
  });
});

describe.each(dialects)("CORS off by default on %s", (dialect: DialectName) => {
  let svc: TestService;

  beforeAll(async () => {
    svc = await startTestService(dialect);
  });
  afterAll(async () => {
    await svc?.close();
  });

  it.each(PREFLIGHTS)("a $kind preflight gets no CORS header and no server error", async ({ path, method, requestHeaders }) => {
    const reply = await preflight(svc.baseUrl, path, ALLOWED, method, requestHeaders);
    expect(reply.status).toBeLessThan(500);
    expect(reply.status).not.toBe(204);
    expect(corsHeaderNames(reply)).toEqual([]);
  });

  it("an answer to a request with an Origin carries no CORS header", async () => {
    const reply = await send(svc.baseUrl, SUPPORTED_VERSIONS, { headers: { origin: ALLOWED, authorization: `Bearer ${await svc.token()}` } });
    expect(reply.status).toBe(200);
    expect(corsHeaderNames(reply)).toEqual([]);
  });
});

describe.each(dialects)("gzip and traceparent on %s", (dialect: DialectName) => {
  let svc: TestService;
  let token: string;

  beforeAll(async () => {
    svc = await startTestService(dialect);
    token = await svc.token();
    const events = Array.from({ length: 300 }, (_, i) => ({
      event_id: `gz-${i}`, user_id: i % 2 === 0 ? "7001" : "7002", model_name: `model-${i % 30}`, model_type: "Chat", model_source: "Builtin",
      timestamp: 1_735_689_600 + i * 600, input_tokens: 100 + i, output_tokens: 7, basic_amount: "0.001000", pay_go_amount: "0",
    }));
    const recorded = await send(svc.baseUrl, BATCH_RECORD, {
      method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify({ events }),
    });
    expect(recorded.status).toBe(200);
  });
  afterAll(async () => {
    await svc?.close();
  });

  /** user-model-usage naming `count` unknown ids: the answer lists them all, so its size grows with `count`. */
  function queryUsage(count: number, headers: Record<string, string> = {}) {
    const user_ids = Array.from({ length: count }, (_, i) => `unknown-member-${i}`);
    return send(svc.baseUrl, USAGE_QUERY, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}`, "x-request-id": "gzip-test", ...headers },
      body: JSON.stringify({ user_ids, start_time: 1_735_689_600, end_time: 1_735_776_000 }),
    });
  }

  it("a REST answer over 1 KB is gzipped when the caller accepts gzip, and decompresses to the identity answer", async () => {
    const plain = await queryUsage(100);
    expect(plain.status).toBe(200);
    expect(plain.body.length).toBeGreaterThan(1024);
    expect(plain.headers["content-encoding"]).toBeUndefined();
    const zipped = await queryUsage(100, { "accept-encoding": "gzip, deflate, br" });
    expect(zipped.status).toBe(200);
    expect(zipped.headers["content-encoding"]).toBe("gzip");
    expect(listOf(zipped.headers.vary)).toContain("accept-encoding");
    expect(Number(zipped.headers["content-length"])).toBe(zipped.body.length);
    expect(zipped.body.length).toBeLessThan(plain.body.length);
    expect(JSON.parse(gunzipSync(zipped.body).toString())).toEqual(JSON.parse(plain.body.toString()));
  });

  it("a REST answer is sent as it is when gzip is not accepted, or when it is 1 KB or less", async () => {
    for (const acceptEncoding of ["identity", "gzip;q=0, br", "deflate"]) {
      const reply = await queryUsage(100, { "accept-encoding": acceptEncoding });
      expect(reply.headers["content-encoding"]).toBeUndefined();
      expect(JSON.parse(reply.body.toString()).data.not_found_user_ids).toHaveLength(100);
    }
    const small = await queryUsage(2, { "accept-encoding": "gzip" });
    expect(small.body.length).toBeLessThanOrEqual(1024);
    expect(small.headers["content-encoding"]).toBeUndefined();
    expect(JSON.parse(small.body.toString()).data.not_found_user_ids).toEqual(["unknown-member-0", "unknown-member-1"]);
    // `*` takes gzip too.
    expect((await queryUsage(100, { "accept-encoding": "*" })).headers["content-encoding"]).toBe("gzip");
  });

  it("the export CSV stream is gzipped, chunked, when accepted, and decompresses to the whole export", async () => {
    const path = `${EXPORT}?start_time=1735689600&end_time=1735948800&format=csv`;
    const plain = await send(svc.baseUrl, path, { headers: { authorization: `Bearer ${token}` } });
    expect(plain.status).toBe(200);
    expect(plain.headers["content-encoding"]).toBeUndefined();
    const lines = plain.body.toString().trim().split("\n");
    expect(lines[0]).toMatch(/^date,user_id,email,/);
    expect(lines.length).toBeGreaterThan(30);
    const zipped = await send(svc.baseUrl, path, { headers: { authorization: `Bearer ${token}`, "accept-encoding": "gzip" } });
    expect(zipped.status).toBe(200);
    expect(zipped.headers["content-type"]).toBe(plain.headers["content-type"]);
    expect(zipped.headers["content-encoding"]).toBe("gzip");
    expect(zipped.headers["transfer-encoding"]).toBe("chunked");
    expect(listOf(zipped.headers.vary)).toContain("accept-encoding");
    expect(gunzipSync(zipped.body).toString()).toBe(plain.body.toString());
  });

  it("Connect answers over 1 KB are gzipped when accepted, in JSON (this server's) and binary (connect-es's); a small one is not", async () => {
    const ids = Array.from({ length: 100 }, (_, i) => `no-such-department-${i}`);
    for (const useBinaryFormat of [false, true]) {
      // connect-es clients send Accept-Encoding: gzip, br.
      const client = createClient(DepartmentService, createConnectTransport({ baseUrl: svc.baseUrl, httpVersion: "1.1", useBinaryFormat }));
      let headers = new Headers();
      const large = await client.batchGetDepartments({ departmentIds: ids }, { headers: { authorization: `Bearer ${token}` }, onHeader: (h) => (headers = h) });
      expect(large.notFoundDepartmentIds).toEqual(ids);
      expect(headers.get("content-encoding")).toBe("gzip");
      // A cache must not hand this answer to a caller that takes no gzip.
      expect([useBinaryFormat, listOf(headers.get("vary") ?? undefined)]).toStrictEqual([useBinaryFormat, expect.arrayContaining(["accept-encoding"])]);
      await client.batchGetDepartments({ departmentIds: ["111"] }, { headers: { authorization: `Bearer ${token}` }, onHeader: (h) => (headers = h) });
      expect(headers.get("content-encoding")).toBeNull();
    }
  });

  it("/openapi.json and the console's script are gzipped when accepted", async () => {
    for (const path of ["/openapi.json", "/console/console.js"]) {
      const plain = await send(svc.baseUrl, path);
      const zipped = await send(svc.baseUrl, path, { headers: { "accept-encoding": "gzip" } });
      expect(zipped.status).toBe(200);
      expect(zipped.headers["content-encoding"]).toBe("gzip");
      expect(gunzipSync(zipped.body).equals(plain.body)).toBe(true);
    }
  });

  /** The access-log line of the request with this x-request-id, once written (it is written when the response closes). */
  async function accessLine(requestId: string): Promise<Record<string, unknown>> {
    return vi.waitFor(() => {
      const line = accessLines(svc.logs).find((l) => l.request_id === requestId);
      if (!line) throw new Error(`no access-log line for ${requestId} yet`);
      return line;
    });
  }

  it("a valid traceparent is logged beside the request id, on REST and on gRPC", async () => {
    await send(svc.baseUrl, SUPPORTED_VERSIONS, { headers: { authorization: `Bearer ${token}`, traceparent: TRACEPARENT, "x-request-id": "traced-rest" } });
    expect(await accessLine("traced-rest")).toMatchObject({ request_id: "traced-rest", trace_id: TRACE_ID, parent_id: PARENT_ID, status: 200 });
    const client = createClient(DepartmentService, createGrpcTransport({ baseUrl: svc.baseUrl }));
    const later = `01-${TRACE_ID}-${PARENT_ID}-00-a-future-field`; // a later version's extra fields are skipped
    await client.batchGetDepartments({ departmentIds: ["111"] }, { headers: { authorization: `Bearer ${token}`, traceparent: later, "x-request-id": "traced-grpc" } });
    expect(await accessLine("traced-grpc")).toMatchObject({ trace_id: TRACE_ID, parent_id: PARENT_ID, procedure: CONNECT_PATH });
  });

  it("an invalid traceparent is not logged, in any part", async () => {
    const invalid = [
      `00-${TRACE_ID.toUpperCase()}-${PARENT_ID}-01`,
      `00-${"0".repeat(32)}-${PARENT_ID}-01`,
      `00-${TRACE_ID}-${"0".repeat(16)}-01`,
      `ff-${TRACE_ID}-${PARENT_ID}-01`,
      `00-${TRACE_ID}-${PARENT_ID}-01-extra`,
      `00-${TRACE_ID}-${PARENT_ID}-01","level":60,"msg":"forged`,
    ];
    for (const [i, traceparent] of invalid.entries()) {
      await send(svc.baseUrl, SUPPORTED_VERSIONS, { headers: { authorization: `Bearer ${token}`, traceparent, "x-request-id": `untraced-${i}` } });
      const line = await accessLine(`untraced-${i}`);
      expect(line.trace_id).toBeUndefined();
      expect(line.parent_id).toBeUndefined();
    }
    expect(svc.logs.filter((line) => line.includes("forged"))).toEqual([]);
  });
});
