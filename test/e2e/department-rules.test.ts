// End to end: the department rules of docs/api-rules.md, against the real
// service over plain fetch (REST) and, for a representative subset, the Connect client.
import { deflateSync, gzipSync } from "node:zlib";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { compressionGzip, createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DepartmentService, type Department } from "../../gen/enterprise_admin/v1/department_pb.js";
import { ErrorDetailSchema } from "../../gen/enterprise_admin/v1/errors_pb.js";
import type { DirectoryFile } from "../../src/domain/directory-file.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { dialects } from "../helpers/databases.js";
import { startTestService, type TestService } from "../helpers/service.js";

const BATCH_GET = "/openapi/v1/departments/batch-get";

const ROOT = { department_id: "100", parent_department_id: "0", name: "Acme Corp", full_path: "Acme Corp", depth: 0 };
const ENGINEERING = { department_id: "110", parent_department_id: "100", name: "Engineering", full_path: "Acme Corp/Engineering", depth: 1 };
const PLATFORM = { department_id: "111", parent_department_id: "110", name: "Platform", full_path: "Acme Corp/Engineering/Platform", depth: 2 };
const MOBILE = { department_id: "112", parent_department_id: "110", name: "Mobile_Apps", full_path: "Acme Corp/Engineering/Mobile_Apps", depth: 2 };
const SALES = { department_id: "120", parent_department_id: "100", name: "Sales", full_path: "Acme Corp/Sales", depth: 1 };
const SALES_ENGINEERING = { department_id: "121", parent_department_id: "120", name: "Sales Engineering", full_path: "Acme Corp/Sales/Sales Engineering", depth: 2 };
const GLOBEX_ROOT = { department_id: "900", parent_department_id: "0", name: "Globex", full_path: "Globex", depth: 0 };
const GLOBEX_ENGINEERING = { department_id: "910", parent_department_id: "900", name: "Engineering", full_path: "Globex/Engineering", depth: 1 };

/** A third tenant whose root has 120 children: enough to see the default page size and the maximum. */
const WIDE_CHILDREN = 120;
const initech: DirectoryFile = {
  enterprise: { enterprise_id: "initech", name: "Initech", currency: "USD" },
  departments: [
    { department_id: "5000", parent_department_id: "0", name: "Initech" },
    ...Array.from({ length: WIDE_CHILDREN }, (_, i) => ({ department_id: `5${String(i + 1).padStart(3, "0")}`, parent_department_id: "5000", name: `Team ${i + 1}` })),
  ],
  members: [],
};

interface Reply {
  status: number;
  headers: Headers;
  json: any;
}

const success = (data: unknown) => ({ code: 0, message: "success", request_id: expect.any(String), data });
const failure = (code: number, message: unknown) => ({ code, message, request_id: expect.any(String), data: null });
/** A message that names the field (and, where given, more words such as the limit). */
const naming = (...words: string[]) => expect.stringMatching(new RegExp(words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*")));

describe.each(dialects)("department rules (%s)", (dialect) => {
  let svc: TestService;
  let acmeToken: string;
  let globexToken: string;
  let initechToken: string;

  beforeAll(async () => {
    svc = await startTestService(dialect);
    await importDirectory(svc.database, initech);
    acmeToken = await svc.token(["departments:read"]);
    globexToken = await svc.token(["departments:read"], "globex");
    initechToken = await svc.token(["departments:read"], "initech");
  });

  afterAll(async () => {
    await svc?.close();
  });

  async function send(method: string, path: string, init: { body?: RequestInit["body"]; token?: string; contentType?: string | null; headers?: Record<string, string> } = {}): Promise<Reply> {
    const headers: Record<string, string> = { authorization: `Bearer ${init.token ?? acmeToken}`, ...init.headers };
    const contentType = init.contentType === undefined ? (init.body !== undefined ? "application/json" : null) : init.contentType;
    if (contentType !== null) headers["content-type"] = contentType;
    const res = await fetch(svc.baseUrl + path, { method, headers, body: init.body, ...(init.body instanceof ReadableStream ? { duplex: "half" } : {}) } as RequestInit);
    const text = await res.text();
    return { status: res.status, headers: res.headers, json: JSON.parse(text) };
  }

  const batchGet = (ids: unknown, token?: string) => send("POST", BATCH_GET, { body: JSON.stringify({ department_ids: ids }), token });
  const get = (path: string, token?: string) => send("GET", path, { token });

  async function expectStillServing(): Promise<void> {
    const reply = await batchGet(["110"]);
    expect(reply.status).toBe(200);
    expect(reply.json).toStrictEqual(success({ items: [ENGINEERING], not_found_department_ids: [] }));
  }

  describe("batch-get", () => {
    it("answers in the success envelope whose request_id is the x-request-id header", async () => {
      const reply = await batchGet(["110"]);
      expect(reply.status).toBe(200);
      expect(reply.json).toStrictEqual(success({ items: [ENGINEERING], not_found_department_ids: [] }));
      expect(reply.json.request_id).toBe(reply.headers.get("x-request-id"));
    });

    it("returns items in the order of first occurrence, each duplicate once", async () => {
      const reply = await batchGet(["121", "110", "121", "111", "110"]);
      expect(reply.json).toStrictEqual(success({ items: [SALES_ENGINEERING, ENGINEERING, PLATFORM], not_found_department_ids: [] }));
    });

    it("lists unknown IDs in not_found exactly as sent, in order, once each", async () => {
      const reply = await batchGet(["abc", " 110", "110", "abc", "999", " 110", "110 "]);
      expect(reply.status).toBe(200);
      expect(reply.json).toStrictEqual(success({ items: [ENGINEERING], not_found_department_ids: ["abc", " 110", "999", "110 "] }));
    });

    it('"0" returns the root\'s own record', async () => {
      const reply = await batchGet(["0"]);
      expect(reply.json).toStrictEqual(success({ items: [ROOT], not_found_department_ids: [] }));
    });

    it('"0" together with "100" returns the root once, in either order', async () => {
      expect((await batchGet(["0", "100"])).json).toStrictEqual(success({ items: [ROOT], not_found_department_ids: [] }));
      expect((await batchGet(["100", "0", "110"])).json).toStrictEqual(success({ items: [ROOT, ENGINEERING], not_found_department_ids: [] }));
    });

    it("gives a nested department its full_path from the root and its depth", async () => {
      const reply = await batchGet(["112", "121"]);
      expect(reply.json.data.items).toStrictEqual([MOBILE, SALES_ENGINEERING]);
    });

    it("prints every field, zero values included (depth 0, empty not_found)", async () => {
      const res = await fetch(svc.baseUrl + BATCH_GET, {
        method: "POST",
        headers: { authorization: `Bearer ${acmeToken}`, "content-type": "application/json" },
        body: JSON.stringify({ department_ids: ["0"] }),
      });
      const text = await res.text();
      expect(text).toContain('"depth":0');
      expect(text).toContain('"not_found_department_ids":[]');
    });

    it("accepts 100 unique IDs", async () => {
      const ids = Array.from({ length: 100 }, (_, i) => String(100 + i)); // "100".."199"
      const known = ["100", "110", "111", "112", "120", "121"];
      const reply = await batchGet(ids);
      expect(reply.status).toBe(200);
      expect(reply.json).toStrictEqual(success({
        items: [ROOT, ENGINEERING, PLATFORM, MOBILE, SALES, SALES_ENGINEERING],
        not_found_department_ids: ids.filter((id) => !known.includes(id)),
      }));
    });

    it("rejects 101 unique IDs with 4001 naming the limit", async () => {
      const reply = await batchGet(Array.from({ length: 101 }, (_, i) => String(100 + i)));
      expect(reply.status).toBe(400);
      expect(reply.json).toStrictEqual(failure(4001, "department_ids after de-duplication: 101 > 100"));
    });

    it("accepts 150 IDs whose duplicates collapse to 100", async () => {
      const unique = ["110", ...Array.from({ length: 99 }, (_, i) => String(1000 + i))];
      const ids = [...unique, ...unique.slice(0, 50)];
      expect(ids).toHaveLength(150);
      const reply = await batchGet(ids);
      expect(reply.status).toBe(200);
      expect(reply.json).toStrictEqual(success({ items: [ENGINEERING], not_found_department_ids: unique.slice(1) }));
    });

    it("rejects an empty department_ids list with 4001", async () => {
      const reply = await batchGet([]);
      expect(reply.status).toBe(400);
      expect(reply.json).toStrictEqual(failure(4001, naming("department_ids")));
    });

    it("rejects a body without department_ids with 4001", async () => {
      const reply = await send("POST", BATCH_GET, { body: "{}" });
      expect(reply.status).toBe(400);
      expect(reply.json).toStrictEqual(failure(4001, naming("department_ids")));
    });
  });

  describe("tenancy", () => {
    it("reports another enterprise's department as not found", async () => {
      const reply = await batchGet(["900", "110", "910"]);
      expect(reply.json).toStrictEqual(success({ items: [ENGINEERING], not_found_department_ids: ["900", "910"] }));
    });

    it("lets the other enterprise see its own departments, and its own root for \"0\"", async () => {
      const reply = await batchGet(["910", "0", "110"], globexToken);
      expect(reply.json).toStrictEqual(success({ items: [GLOBEX_ENGINEERING, GLOBEX_ROOT], not_found_department_ids: ["110"] }));
    });
  });

  describe("bad input", () => {
    it("rejects malformed JSON with 4001 naming the body", async () => {
      const reply = await send("POST", BATCH_GET, { body: '{"department_ids": ["100"' });
      expect(reply.status).toBe(400);
      expect(reply.json).toStrictEqual(failure(4001, naming("body")));
    });

    it("rejects department_ids given as a string with 4001 naming the field", async () => {
      const reply = await send("POST", BATCH_GET, { body: '{"department_ids":"100"}' });
      expect(reply.status).toBe(400);
      expect(reply.json).toStrictEqual(failure(4001, naming("department_ids")));
    });

    it("rejects a number inside department_ids with 4001 naming the field", async () => {
      const reply = await send("POST", BATCH_GET, { body: '{"department_ids":[1]}' });
      expect(reply.status).toBe(400);
      expect(reply.json).toStrictEqual(failure(4001, naming("department_ids")));
    });

    it("rejects an unknown field with 4001 naming it", async () => {
      const reply = await send("POST", BATCH_GET, { body: '{"department_ids":["100"],"x":1}' });
      expect(reply.status).toBe(400);
      expect(reply.json).toStrictEqual(failure(4001, expect.stringMatching(/\bx\b/)));
    });

    it("rejects a JSON body that is not an object with 4001", async () => {
      const reply = await send("POST", BATCH_GET, { body: '["100"]' });
      expect(reply.status).toBe(400);
      expect(reply.json).toStrictEqual(failure(4001, expect.any(String)));
    });

    it("rejects a POST without Content-Type with 415", async () => {
      const reply = await send("POST", BATCH_GET, { body: new TextEncoder().encode('{"department_ids":["100"]}'), contentType: null });
      expect(reply.status).toBe(415);
      expect(reply.json).toStrictEqual(failure(4150, naming("Content-Type")));
    });

    it("rejects a text/plain POST with 415", async () => {
      const reply = await send("POST", BATCH_GET, { body: '{"department_ids":["100"]}', contentType: "text/plain" });
      expect(reply.status).toBe(415);
      expect(reply.json).toStrictEqual(failure(4150, naming("Content-Type")));
    });

    it("rejects a compressed body (Content-Encoding gzip or br) with 415 naming Content-Encoding, rather than reading its bytes as JSON", async () => {
      const json = '{"department_ids":["110"]}';
      for (const [encoding, body] of [["gzip", gzipSync(json)], ["br", new TextEncoder().encode(json)]] as const) {
        const reply = await send("POST", BATCH_GET, { body, headers: { "content-encoding": encoding } });
        expect(reply.status).toBe(415);
        expect(reply.json).toStrictEqual(failure(4150, expect.stringContaining(`Content-Encoding "${encoding}" is not accepted`)));
      }
      for (const encoding of ["identity", "IDENTITY", ""]) {
        const plain = await send("POST", BATCH_GET, { body: json, headers: { "content-encoding": encoding } });
        expect(plain.json).toStrictEqual(success({ items: [ENGINEERING], not_found_department_ids: [] }));
      }
    });

    it("accepts application/json with a charset parameter", async () => {
      const reply = await send("POST", BATCH_GET, { body: '{"department_ids":["110"]}', contentType: "application/json; charset=utf-8" });
      expect(reply.json).toStrictEqual(success({ items: [ENGINEERING], not_found_department_ids: [] }));
    });

    it("answers GET on batch-get with 405 and Allow: POST", async () => {
      const reply = await get(BATCH_GET);
      expect(reply.status).toBe(405);
      expect(reply.headers.get("allow")).toBe("POST");
      expect(reply.json).toStrictEqual(failure(4005, expect.any(String)));
    });

    it("answers HEAD on a GET route as GET, without the body; a POST there gets 405 with Allow: GET, HEAD", async () => {
      const path = "/openapi/v1/departments/search?keyword=engin";
      const [got, head] = await Promise.all(["GET", "HEAD"].map((method) => fetch(svc.baseUrl + path, { method, headers: { authorization: `Bearer ${acmeToken}` } })));
      const body = await got!.text();
      expect([head!.status, head!.headers.get("content-type"), head!.headers.get("content-length"), await head!.text()])
        .toStrictEqual([200, got!.headers.get("content-type"), String(Buffer.byteLength(body)), ""]);
      const posted = await send("POST", path, { body: "{}" });
      expect([posted.status, posted.headers.get("allow")]).toStrictEqual([405, "GET, HEAD"]);
    });

    it("answers an unknown /openapi path with 404 code 4004", async () => {
      const reply = await get("/openapi/v1/departments/batch-get/nothing");
      expect(reply.status).toBe(404);
      expect(reply.json).toStrictEqual(failure(4004, expect.any(String)));
      expect((await get("/openapi/v2/nothing")).json).toStrictEqual(failure(4004, expect.any(String)));
    });

    it("still answers a good request after the bad ones", async () => {
      await expectStillServing();
    });
  });

  describe("body size", () => {
    const oversized = () => JSON.stringify({ department_ids: ["x".repeat(1024 * 1024)] }); // just over 1 MiB

    it("rejects a body over 1 MiB with 413, then still answers", async () => {
      const reply = await send("POST", BATCH_GET, { body: oversized() });
      expect(reply.status).toBe(413);
      expect(reply.json).toStrictEqual(failure(4130, expect.any(String)));
      await expectStillServing();
    });

    it("rejects a streamed body (no Content-Length) over 1 MiB with 413, then still answers", async () => {
      const bytes = new TextEncoder().encode(oversized());
      const chunk = 64 * 1024;
      let at = 0;
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (at >= bytes.length) return controller.close();
          controller.enqueue(bytes.subarray(at, at + chunk));
          at += chunk;
        },
      });
      const reply = await send("POST", BATCH_GET, { body: stream });
      expect(reply.status).toBe(413);
      expect(reply.json).toStrictEqual(failure(4130, expect.any(String)));
      await expectStillServing();
    });

    it("over Connect protobuf and gRPC, a message over 1 MiB is resource_exhausted with the ErrorDetail 4130, as REST's 413", async () => {
      const request = { departmentIds: ["x".repeat(1024 * 1024)] };
      for (const transport of [createConnectTransport({ baseUrl: svc.baseUrl, httpVersion: "1.1", useBinaryFormat: true }), createGrpcTransport({ baseUrl: svc.baseUrl })]) {
        const failure = await createClient(DepartmentService, transport).batchGetDepartments(request, { headers: { authorization: `Bearer ${acmeToken}` } })
          .then(() => undefined, (e: unknown) => ConnectError.from(e));
        expect(failure?.code).toBe(Code.ResourceExhausted);
        expect(failure?.findDetails(ErrorDetailSchema).map((d) => d.code)).toStrictEqual([4130]);
        expect(failure?.rawMessage).toBe("body: larger than the limit of 1048576 bytes");
      }
      // With its Content-Length stated, refused by it unread.
      const declared = await fetch(`${svc.baseUrl}/enterprise_admin.v1.DepartmentService/BatchGetDepartments`, {
        method: "POST", headers: { authorization: `Bearer ${acmeToken}`, "content-type": "application/proto" }, body: Buffer.alloc(1024 * 1024 + 1),
      });
      const answer = (await declared.json()) as { code: string; message: string; details?: unknown[] };
      expect([answer.code, answer.message, answer.details?.length]).toStrictEqual(["resource_exhausted", "body: larger than the limit of 1048576 bytes", 1]);
      await expectStillServing();
    });

    it("a compressed message is read as sent: over 1 MiB once decompressed, 4130 with its ErrorDetail; not valid gzip or protobuf, 4001", async () => {
      const compressing = { sendCompression: compressionGzip, compressMinBytes: 0 };
      const transports = [
        createConnectTransport({ baseUrl: svc.baseUrl, httpVersion: "1.1", useBinaryFormat: true, ...compressing }),
        createGrpcTransport({ baseUrl: svc.baseUrl, ...compressing }),
        createGrpcWebTransport({ baseUrl: svc.baseUrl, httpVersion: "1.1", useBinaryFormat: true, ...compressing }),
      ];
      const headers = { authorization: `Bearer ${acmeToken}` };
      for (const transport of transports) {
        const client = createClient(DepartmentService, transport);
        const failure = await client.batchGetDepartments({ departmentIds: ["x".repeat(1024 * 1024)] }, { headers })
          .then(() => undefined, (e: unknown) => ConnectError.from(e));
        // It was connect-es's own "message is larger than configured readMaxBytes 1048576 after decompression", without the detail.
        expect([failure?.code, failure?.rawMessage, failure?.findDetails(ErrorDetailSchema).map((d) => d.code)])
          .toStrictEqual([Code.ResourceExhausted, "body: larger than the limit of 1048576 bytes", [4130]]);
        expect((await client.batchGetDepartments({ departmentIds: ["110"] }, { headers })).items.map((d) => d.name)).toStrictEqual([ENGINEERING.name]);
      }
      const post = (body: Uint8Array) => fetch(`${svc.baseUrl}/enterprise_admin.v1.DepartmentService/BatchGetDepartments`, {
        method: "POST", headers: { ...headers, "content-type": "application/proto", "content-encoding": "gzip" }, body,
      }).then(async (reply) => [reply.status, ((await reply.json()) as { message: string }).message]);
      expect(await post(Buffer.from("not gzip at all"))).toStrictEqual([400, "body: not valid gzip data"]);
      // A compression the service does not take is 4150, as on REST (it was connect-es's 501 unimplemented, counted as a success).
      const deflated = await fetch(`${svc.baseUrl}/enterprise_admin.v1.DepartmentService/BatchGetDepartments`, {
        method: "POST", headers: { ...headers, "content-type": "application/proto", "content-encoding": "deflate" }, body: deflateSync(Buffer.from([0x0a, 0x03, 0x31, 0x31, 0x30])),
      });
      const refused = (await deflated.json()) as { code: string; message: string; details?: { debug?: { code?: number } }[] };
      expect([deflated.status, refused.code, refused.message, refused.details?.[0]?.debug?.code])
        .toStrictEqual([400, "invalid_argument", 'content-encoding: "deflate" is not accepted: send one of identity, gzip, br', 4150]);
      expect(await post(gzipSync(Buffer.from([0x0a, 0x05, 0x31])))).toStrictEqual([400, expect.stringMatching(/^body: not a valid enterprise_admin\.v1\.BatchGetDepartmentsRequest message/)]);
      await expectStillServing();
    });

    it("reads a content coding in any case (Connect JSON 'Identity', protobuf 'GZIP'); a JSON body in a coding the service lacks is its own 4001, answered and logged as such", async () => {
      const rpc = (contentType: string, encoding: string, body: Uint8Array | string) => fetch(`${svc.baseUrl}/enterprise_admin.v1.DepartmentService/BatchGetDepartments`, {
        method: "POST", headers: { authorization: `Bearer ${acmeToken}`, "content-type": contentType, "content-encoding": encoding }, body,
      });
      const json = await rpc("application/json", "Identity", JSON.stringify({ department_ids: ["110"] }));
      expect([json.status, ((await json.json()) as { items: Array<{ name: string }> }).items.map((d) => d.name)]).toStrictEqual([200, [ENGINEERING.name]]);
      const proto = await rpc("application/proto", " GZIP", gzipSync(Buffer.from([0x0a, 0x03, 0x31, 0x31, 0x30])));
      expect(proto.status).toBe(200);
      // It was connect-es's 501 unimplemented ("unknown compression"), without the service's detail, while the access log said 4001.
      const deflated = await rpc("application/json", "deflate", deflateSync(JSON.stringify({ department_ids: ["110"] })));
      const refused = (await deflated.json()) as { code: string; message: string; details?: { debug?: { code?: number } }[] };
      expect([deflated.status, refused.code, refused.details?.[0]?.debug?.code]).toStrictEqual([400, "invalid_argument", 4001]);
      expect(refused.message).toContain("JSON bodies are taken uncompressed");
      const requestId = deflated.headers.get("x-request-id");
      await expect.poll(() => svc.logs.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.msg === "request" && line.request_id === requestId))
        .toMatchObject({ status: 400, code: 4001 });
    });

    it("a gRPC message over 1 MiB is over once answered: its stream ends and it is logged as 4130, not held to the request timeout (5040)", async () => {
      const tally = async () => {
        const text = await (await fetch(`${svc.baseUrl}/metrics`)).text();
        const line = (code: number) => text.split("\n").find((l) => l.startsWith(
          `enterprise_admin_calls_total{procedure="/enterprise_admin.v1.DepartmentService/BatchGetDepartments",transport="grpc",code="${code}"}`));
        return [4130, 5040].map((code) => Number(line(code)?.split(" ")[1] ?? 0));
      };
      const [before] = await tally();
      const started = performance.now();
      const failure = await createClient(DepartmentService, createGrpcTransport({ baseUrl: svc.baseUrl }))
        .batchGetDepartments({ departmentIds: ["x".repeat(3 * 1024 * 1024)] }, { headers: { authorization: `Bearer ${acmeToken}` } })
        .then(() => undefined, (e: unknown) => ConnectError.from(e));
      expect(failure?.findDetails(ErrorDetailSchema).map((d) => d.code)).toStrictEqual([4130]);
      let seen = await tally();
      while (seen[0] === before && performance.now() - started < 10_000) seen = (await new Promise((r) => setTimeout(r, 50)), await tally());
      expect(seen).toStrictEqual([before! + 1, 0]);
      expect(performance.now() - started).toBeLessThan(5_000);
    });

    it("over HTTP/1.1, the call after a refused body on the same connection is answered (it was reset after 6 s): that answer closes the connection", async () => {
      const headers = { authorization: `Bearer ${acmeToken}` };
      for (const transport of [
        createConnectTransport({ baseUrl: svc.baseUrl, httpVersion: "1.1" }),
        createConnectTransport({ baseUrl: svc.baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
        createGrpcWebTransport({ baseUrl: svc.baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
      ]) {
        const client = createClient(DepartmentService, transport);
        const refused = await client.batchGetDepartments({ departmentIds: ["x".repeat(2 * 1024 * 1024)] }, { headers })
          .then(() => undefined, (e: unknown) => ConnectError.from(e));
        expect(refused?.findDetails(ErrorDetailSchema).map((d) => d.code)).toStrictEqual([4130]);
        const started = performance.now();
        expect((await client.batchGetDepartments({ departmentIds: ["110"] }, { headers, timeoutMs: 3000 })).items.map((d) => d.name)).toStrictEqual([ENGINEERING.name]);
        expect(performance.now() - started).toBeLessThan(1000);
      }
    });

    it("accepts a body of exactly 1 MiB (whitespace padding)", async () => {
      const body = JSON.stringify({ department_ids: ["110"] }).padEnd(1024 * 1024, " ");
      const reply = await send("POST", BATCH_GET, { body });
      expect(reply.status).toBe(200);
      expect(reply.json).toStrictEqual(success({ items: [ENGINEERING], not_found_department_ids: [] }));
    });
  });

  describe("children", () => {
    const children = (parent: string, query = "", token?: string) => get(`/openapi/v1/departments/${parent}/children${query}`, token);

    it('lists the root itself as the only child of "0"', async () => {
      expect((await children("0")).json).toStrictEqual(success({ items: [ROOT], next_page_token: "" }));
    });

    it("lists the direct children of 110 ordered by department_id", async () => {
      expect((await children("110")).json).toStrictEqual(success({ items: [PLATFORM, MOBILE], next_page_token: "" }));
    });

    it("lists no children of a leaf, with every field present", async () => {
      expect((await children("111")).json).toStrictEqual(success({ items: [], next_page_token: "" }));
    });

    it('with page_size=1 pages through 110\'s children until next_page_token is ""', async () => {
      const first = await children("110", "?page_size=1");
      expect(first.json).toStrictEqual(success({ items: [PLATFORM], next_page_token: expect.any(String) }));
      expect(first.json.data.next_page_token).not.toBe("");
      const second = await children("110", `?page_size=1&page_token=${encodeURIComponent(first.json.data.next_page_token)}`);
      expect(second.json).toStrictEqual(success({ items: [MOBILE], next_page_token: "" }));
    });

    it("pages on past departments whose ids are 128 four-byte characters: every token issued is taken back", async () => {
      const ids = ["𝔞", "𝔟", "𝔠"].map((letter) => letter.repeat(128));
      await importDirectory(svc.database, {
        enterprise: { enterprise_id: "long-ids", name: "Long ids", currency: "USD" },
        departments: [{ department_id: "r", parent_department_id: "0", name: "Root" },
          ...ids.map((department_id) => ({ department_id, parent_department_id: "r", name: department_id.slice(0, 4) }))],
        members: [],
      });
      const token = await svc.token(["departments:read"], "long-ids");
      const seen: string[] = [];
      let pageToken = "";
      do {
        const reply = await children("r", `?page_size=1&page_token=${encodeURIComponent(pageToken)}`, token);
        expect(reply.json.code, reply.json.message).toBe(0);
        seen.push(...reply.json.data.items.map((item: any) => item.department_id));
        pageToken = reply.json.data.next_page_token;
      } while (pageToken !== "" && seen.length < 5);
      expect(seen).toStrictEqual(ids);
    });

    it("rejects a page_token from another query with 4001", async () => {
      const other = await children("100", "?page_size=1");
      const foreign = other.json.data.next_page_token as string;
      expect(foreign).not.toBe("");
      const reply = await children("110", `?page_size=1&page_token=${encodeURIComponent(foreign)}`);
      expect(reply.status).toBe(400);
      expect(reply.json).toStrictEqual(failure(4001, naming("page_token")));

      const search = await get("/openapi/v1/departments/search?keyword=engin&page_size=1");
      const fromSearch = await children("110", `?page_size=1&page_token=${encodeURIComponent(search.json.data.next_page_token)}`);
      expect(fromSearch.json).toStrictEqual(failure(4001, naming("page_token")));
    });

    it("rejects a forged page_token with 4001", async () => {
      const reply = await children("110", "?page_token=not-a-token");
      expect(reply.status).toBe(400);
      expect(reply.json).toStrictEqual(failure(4001, naming("page_token")));
    });

    it("rejects page_size=-1 with 4001 naming page_size", async () => {
      const reply = await children("110", "?page_size=-1");
      expect(reply.status).toBe(400);
      expect(reply.json).toStrictEqual(failure(4001, naming("page_size")));
    });

    it("rejects a non-numeric page_size with 4001 naming page_size", async () => {
      const reply = await children("110", "?page_size=ten");
      expect(reply.status).toBe(400);
      expect(reply.json).toStrictEqual(failure(4001, naming("page_size")));
    });

    it("uses a page of 50 when page_size is absent or 0", async () => {
      for (const query of ["", "?page_size=0"]) {
        const reply = await children("5000", query, initechToken);
        expect(reply.json.data.items).toHaveLength(50);
        expect(reply.json.data.items[0].department_id).toBe("5001");
        expect(reply.json.data.next_page_token).not.toBe("");
      }
    });

    it("lowers page_size=1000 to 100 without an error", async () => {
      const first = await children("5000", "?page_size=1000", initechToken);
      expect(first.status).toBe(200);
      expect(first.json.data.items).toHaveLength(100);
      expect(first.json.data.items.at(-1).department_id).toBe("5100");
      const rest = await children("5000", `?page_size=1000&page_token=${encodeURIComponent(first.json.data.next_page_token)}`, initechToken);
      expect(rest.json.data.items.map((d: { department_id: string }) => d.department_id)).toStrictEqual(
        Array.from({ length: WIDE_CHILDREN - 100 }, (_, i) => String(5101 + i)),
      );
      expect(rest.json.data.next_page_token).toBe("");
    });

    it("answers an unknown parent with 404 code 4042", async () => {
      const reply = await children("999");
      expect(reply.status).toBe(404);
      expect(reply.json).toStrictEqual(failure(4042, naming("999")));
    });

    it("answers another enterprise's parent with 404 code 4042", async () => {
      const reply = await children("900");
      expect(reply.status).toBe(404);
      expect(reply.json).toStrictEqual(failure(4042, expect.any(String)));
      expect((await children("900", "", globexToken)).json).toStrictEqual(success({ items: [GLOBEX_ENGINEERING], next_page_token: "" }));
    });
  });

  describe("search", () => {
    const search = (query: string, token?: string) => get(`/openapi/v1/departments/search?${query}`, token);

    it('finds "ENGIN" in 110 and 121, case-insensitively, ordered by department_id', async () => {
      expect((await search("keyword=ENGIN")).json).toStrictEqual(success({ items: [ENGINEERING, SALES_ENGINEERING], next_page_token: "" }));
      expect((await search("keyword=engineering")).json).toStrictEqual(success({ items: [ENGINEERING, SALES_ENGINEERING], next_page_token: "" }));
    });

    it("folds the Greek sigma alike in every form: Σ, σ and the final ς each find ΟΔΟΣ (ς at its end once folded) and ΣΟΦΙΑ", async () => {
      await importDirectory(svc.database, {
        enterprise: { enterprise_id: "hellas", name: "Hellas", currency: "USD" },
        departments: [{ department_id: "r", parent_department_id: "0", name: "ΡΙΖΑ" },
          { department_id: "a", parent_department_id: "r", name: "ΟΔΟΣ" }, { department_id: "b", parent_department_id: "r", name: "ΣΟΦΙΑ" }],
        members: [],
      });
      const token = await svc.token(["departments:read"], "hellas");
      const names = async (keyword: string) => (await search(`keyword=${encodeURIComponent(keyword)}`, token)).json.data.items.map((d: any) => d.name);
      for (const keyword of ["Σ", "σ", "ς"]) expect(await names(keyword), keyword).toStrictEqual(["ΟΔΟΣ", "ΣΟΦΙΑ"]);
      for (const keyword of ["ΟΔΟΣ", "οδος", "οδοσ", "ΟΔΟσ"]) expect(await names(keyword), keyword).toStrictEqual(["ΟΔΟΣ"]);
    });

    it('matches "_" literally: only Mobile_Apps', async () => {
      expect((await search("keyword=_")).json).toStrictEqual(success({ items: [MOBILE], next_page_token: "" }));
    });

    it('matches "%" literally: nothing', async () => {
      expect((await search(`keyword=${encodeURIComponent("%")}`)).json).toStrictEqual(success({ items: [], next_page_token: "" }));
    });

    it("rejects an empty or missing keyword with 4001 naming keyword", async () => {
      for (const query of ["keyword=", ""]) {
        const reply = await search(query);
        expect(reply.status).toBe(400);
        expect(reply.json).toStrictEqual(failure(4001, naming("keyword")));
      }
    });

    it("pages with page_size=1 until next_page_token is empty", async () => {
      const first = await search("keyword=engin&page_size=1");
      expect(first.json).toStrictEqual(success({ items: [ENGINEERING], next_page_token: expect.any(String) }));
      const second = await search(`keyword=engin&page_size=1&page_token=${encodeURIComponent(first.json.data.next_page_token)}`);
      expect(second.json).toStrictEqual(success({ items: [SALES_ENGINEERING], next_page_token: "" }));
    });

    it("sees only the caller's enterprise", async () => {
      expect((await search("keyword=engineering", globexToken)).json).toStrictEqual(success({ items: [GLOBEX_ENGINEERING], next_page_token: "" }));
      expect((await search("keyword=globex")).json).toStrictEqual(success({ items: [], next_page_token: "" }));
    });
  });

  describe("over the Connect protocol", () => {
    const plain = (d: Department) => ({
      department_id: d.departmentId, parent_department_id: d.parentDepartmentId, name: d.name, full_path: d.fullPath, depth: d.depth,
    });
    const client = () => createClient(DepartmentService, createConnectTransport({ baseUrl: svc.baseUrl, httpVersion: "1.1" }));
    const auth = () => ({ headers: { authorization: `Bearer ${acmeToken}` } });

    it("keeps order of first occurrence, de-duplicates and lists not-found IDs as sent", async () => {
      const res = await client().batchGetDepartments({ departmentIds: ["121", "abc", "0", "121", " 110", "100", "abc"] }, auth());
      expect(res.items.map(plain)).toStrictEqual([SALES_ENGINEERING, ROOT]);
      expect(res.notFoundDepartmentIds).toStrictEqual(["abc", " 110"]);
    });

    it("rejects 101 unique IDs with invalid_argument carrying code 4001", async () => {
      const ids = Array.from({ length: 101 }, (_, i) => String(100 + i));
      const error = await client().batchGetDepartments({ departmentIds: ids }, auth()).then(() => undefined, (e: unknown) => ConnectError.from(e));
      expect(error?.code).toBe(Code.InvalidArgument);
      expect(error?.rawMessage).toBe("department_ids after de-duplication: 101 > 100");
      expect(error?.findDetails(ErrorDetailSchema).map((d) => ({ code: d.code, message: d.message }))).toStrictEqual([
        { code: 4001, message: "department_ids after de-duplication: 101 > 100" },
      ]);
    });

    it("accepts 100 unique IDs", async () => {
      const ids = Array.from({ length: 100 }, (_, i) => String(100 + i));
      const res = await client().batchGetDepartments({ departmentIds: ids }, auth());
      expect(res.items.map((d) => d.departmentId)).toStrictEqual(["100", "110", "111", "112", "120", "121"]);
      expect(res.notFoundDepartmentIds).toHaveLength(94);
    });
  });
});
