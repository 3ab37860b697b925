// End to end: hostile input is refused with a 4001 naming the field or the limit (never a 500, never
// silently changed), on REST, Connect JSON, Connect binary, gRPC (grpc-js) and gRPC-Web, against the
// real service; and gRPC clients read error messages and details as they were sent.
import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { create, createFileRegistry, fromBinary, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BatchGetDepartmentsRequestSchema } from "../../gen/enterprise_admin/v1/department_pb.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { dialects } from "../helpers/databases.js";
import { decodeGoogleRpcStatus } from "../helpers/grpc-status.js";
import { acme } from "../helpers/fixtures.js";
import { startTestService, type TestService } from "../helpers/service.js";

const PROTO_DIR = join(dirname(fileURLToPath(import.meta.url)), "../../proto");
const BUF = join(dirname(fileURLToPath(import.meta.url)), "../../node_modules/.bin/buf");
const BATCH_GET_RPC = "/enterprise_admin.v1.DepartmentService/BatchGetDepartments";
const EXPORT_RPC = "/enterprise_admin.v1.UsageService/ExportUsage";
const DEEP_LIMIT_MESSAGE = "body: JSON nested deeper than 64 levels";
const EMPTY_IDS_MESSAGE = "department_ids: must contain at least 1 item";
/** 100,000 levels of objects: about 600 KB, under the 1 MiB body limit. */
const DEEP_JSON = '{"a":'.repeat(100_000) + "1" + "}".repeat(100_000);

interface LogLine { level: number; code?: number; status?: number; request_id?: string; err?: unknown }
const logLinesOf = (svc: TestService, requestId: string): LogLine[] =>
  svc.logs.map((line) => JSON.parse(line) as LogLine).filter((line) => line.request_id === requestId);

/** A protobuf body that is not a message: field 1 (a string) claims 5 bytes and the body ends after 1. */
const TRUNCATED_PROTOBUF = new Uint8Array([0x0a, 0x05, 0x31]);

/** The gRPC length-prefixed envelope around one uncompressed message. */
function envelope(message: Uint8Array): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

/** One unary call with @grpc/grpc-js, sending `bytes` as the request message as they are. */
function grpcJsCall(port: number, path: string, bytes: Uint8Array, authorization?: string, requestId?: string) {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  if (authorization) metadata.set("authorization", authorization);
  if (requestId) metadata.set("x-request-id", requestId);
  return new Promise<grpc.ServiceError>((resolve, reject) => {
    client.makeUnaryRequest(path, (b: Uint8Array) => Buffer.from(b), (b: Buffer) => b, bytes, metadata, (err) => {
      client.close();
      if (err) resolve(err);
      else reject(new Error("expected an error"));
    });
  });
}

/** One server-streaming call with @grpc/grpc-js, sending `bytes` as the request message; resolves with its error. */
function grpcJsServerStream(port: number, path: string, bytes: Uint8Array, authorization: string) {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set("authorization", authorization);
  return new Promise<grpc.ServiceError>((resolve, reject) => {
    const call = client.makeServerStreamRequest(path, (b: Uint8Array) => Buffer.from(b), (b: Buffer) => b, bytes, metadata);
    call.on("data", () => undefined);
    call.on("error", (err: grpc.ServiceError) => {
      client.close();
      resolve(err);
    });
    call.on("end", () => reject(new Error("expected an error")));
  });
}

/**
 * Decodes a grpc-status-details-bin trailer the way a client that has only the shipped .proto files
 * would: `buf build` compiles proto/google/rpc/status.proto and proto/enterprise_admin/v1/errors.proto
 * (offline), and their descriptors decode google.rpc.Status and unpack its ErrorDetail.
 * (@grpc/proto-loader regroups types into one file per package without imports, so its descriptors
 * cannot be handed to another decoder.)
 */
function decodeStatusDetails(bytes: Buffer) {
  const descriptorSet = execFileSync(BUF, ["build", PROTO_DIR, "--path", join(PROTO_DIR, "google/rpc/status.proto"),
    "--path", join(PROTO_DIR, "enterprise_admin/v1/errors.proto"), "-o", "-#format=binpb"]);
  const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, descriptorSet));
  return decodeGoogleRpcStatus(bytes, {
    status: registry.getMessage("google.rpc.Status")!, errorDetail: registry.getMessage("enterprise_admin.v1.ErrorDetail")!,
  });
}

/** The trailer frame (flag 0x80) of a gRPC-Web response body, as a header map. */
function grpcWebTrailers(body: Buffer): Record<string, string> {
  let at = 0;
  while (at + 5 <= body.length) {
    const flags = body[at]!;
    const length = body.readUInt32BE(at + 1);
    const frame = body.subarray(at + 5, at + 5 + length);
    at += 5 + length;
    if (flags & 0x80) {
      return Object.fromEntries(frame.toString("latin1").split("\r\n").filter(Boolean)
        .map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]));
    }
  }
  throw new Error("no trailer frame");
}

describe.each(dialects)("hostile input is refused, never a 500 (%s)", (dialect) => {
  let svc: TestService;
  let bearer: string;

  beforeAll(async () => {
    svc = await startTestService(dialect);
    bearer = `Bearer ${await svc.token()}`;
  });
  afterAll(async () => {
    await svc?.close();
  });

  async function post(path: string, body: string | Uint8Array, headers: Record<string, string> = {}) {
    const res = await fetch(`${svc.baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: bearer, ...headers },
      body,
    });
    return { status: res.status, requestId: res.headers.get("x-request-id")!, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
  }
  const json = (r: { body: Buffer }) => JSON.parse(r.body.toString("utf8")) as Record<string, unknown>;

  describe("JSON nested 100,000 deep", () => {
    it("REST answers 400 with 4001 naming the limit, logged at info without a stack", async () => {
      const res = await post("/openapi/v1/departments/batch-get", DEEP_JSON);
      expect(res.status).toBe(400);
      expect(json(res)).toEqual({ code: 4001, message: DEEP_LIMIT_MESSAGE, request_id: res.requestId, data: null });
      const [line] = logLinesOf(svc, res.requestId);
      expect(line).toMatchObject({ level: 30, code: 4001, status: 400 });
      expect(line!.err).toBeUndefined();
    });

    it("Connect JSON answers invalid_argument with ErrorDetail 4001 naming the limit", async () => {
      const res = await post(BATCH_GET_RPC, DEEP_JSON);
      expect(res.status).toBe(400);
      const body = json(res) as { code: string; message: string; details: { type: string; debug: unknown }[] };
      expect(body.code).toBe("invalid_argument");
      expect(body.message).toBe(DEEP_LIMIT_MESSAGE);
      expect(body.details[0]).toMatchObject({ type: "enterprise_admin.v1.ErrorDetail", debug: { code: 4001, message: DEEP_LIMIT_MESSAGE } });
      expect(logLinesOf(svc, res.requestId)[0]).toMatchObject({ level: 30, code: 4001 });
    });

    it("64 levels are read; 65 are refused", async () => {
      const nested = (levels: number) => '{"department_ids":["1"],"x":' + "[".repeat(levels - 1) + "]".repeat(levels - 1) + "}";
      expect(json(await post("/openapi/v1/departments/batch-get", nested(64))).message).toBe("x: unknown field");
      expect(json(await post("/openapi/v1/departments/batch-get", nested(65))).message).toBe(DEEP_LIMIT_MESSAGE);
    });

    it("without a valid token REST answers 401 (1002) whatever the body: the body is not parsed", async () => {
      for (const authorization of ["", "Bearer not-a-token"]) {
        const res = await post("/openapi/v1/departments/batch-get", DEEP_JSON, { authorization });
        expect(res.status).toBe(401);
        expect(json(res).code).toBe(1002);
      }
      const garbage = await post("/openapi/v1/departments/batch-get", "{not json", { authorization: "" });
      expect(garbage.status).toBe(401);
    });
  });

  describe("a malformed protobuf body is invalid_argument (4001), logged at info", () => {
    it("Connect binary: HTTP 400, invalid_argument, ErrorDetail 4001", async () => {
      const res = await post(BATCH_GET_RPC, TRUNCATED_PROTOBUF, { "content-type": "application/proto" });
      expect(res.status).toBe(400);
      const body = json(res) as { code: string; message: string; details: { debug: { code: number } }[] };
      expect(body.code).toBe("invalid_argument");
      expect(body.message).toMatch(/^body: not a valid enterprise_admin\.v1\.BatchGetDepartmentsRequest message/);
      expect(body.details[0]!.debug.code).toBe(4001);
      const [line] = logLinesOf(svc, res.requestId);
      expect(line).toMatchObject({ level: 30, code: 4001 });
      expect(line!.err).toBeUndefined();
    });

    it("gRPC (grpc-js): INVALID_ARGUMENT with ErrorDetail 4001 in grpc-status-details-bin", async () => {
      const err = await grpcJsCall(svc.port, BATCH_GET_RPC, TRUNCATED_PROTOBUF, bearer, "malformed-grpc");
      expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
      const status = decodeStatusDetails(err.metadata.get("grpc-status-details-bin")[0] as Buffer);
      expect(status.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(status.details).toEqual([{ code: 4001, message: err.details, requestId: "malformed-grpc" }]);
      expect(logLinesOf(svc, "malformed-grpc")[0]).toMatchObject({ level: 30, code: 4001 });
    });

    it("gRPC-Web: grpc-status 3 in the trailer frame", async () => {
      const res = await post(BATCH_GET_RPC, envelope(TRUNCATED_PROTOBUF), { "content-type": "application/grpc-web+proto" });
      expect(grpcWebTrailers(res.body)["grpc-status"]).toBe("3");
    });

    it("a server-streaming method (ExportUsage) too: gRPC INVALID_ARGUMENT, Connect streaming invalid_argument", async () => {
      const stream = await grpcJsServerStream(svc.port, EXPORT_RPC, TRUNCATED_PROTOBUF, bearer);
      expect(stream.code).toBe(grpc.status.INVALID_ARGUMENT);
      // Field 1 is start_time there, an int64: its wire type is named before the cut.
      expect(stream.details).toBe("start_time: sent as length-delimited bytes, where this field takes a varint");
      const res = await post(EXPORT_RPC, envelope(TRUNCATED_PROTOBUF), { "content-type": "application/connect+proto" });
      expect(res.status).toBe(200); // a Connect stream's error travels in its end-of-stream message
      const end = JSON.parse(Buffer.from(res.body).subarray(5).toString()) as { error: { code: string; message: string } };
      expect(end.error.code).toBe("invalid_argument");
      expect(end.error.message).toBe("start_time: sent as length-delimited bytes, where this field takes a varint");
    });

    it("gRPC reflection, a bidirectional stream: a message that cannot be decoded is INVALID_ARGUMENT with ErrorDetail 4001, not a server fault", async () => {
      const client = new grpc.Client(`127.0.0.1:${svc.port}`, grpc.credentials.createInsecure());
      const metadata = new grpc.Metadata();
      metadata.set("x-request-id", "malformed-reflection");
      const err = await new Promise<grpc.ServiceError>((resolve, reject) => {
        const call = client.makeBidiStreamRequest("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", (b: Uint8Array) => Buffer.from(b), (b: Buffer) => b, metadata);
        call.on("data", () => undefined);
        call.on("error", resolve);
        call.on("end", () => reject(new Error("expected an error")));
        call.write(TRUNCATED_PROTOBUF);
        call.end();
      });
      client.close();
      expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toBe("body: a message is not a valid grpc.reflection.v1.ServerReflectionRequest (premature EOF)");
      const status = decodeStatusDetails(err.metadata.get("grpc-status-details-bin")[0] as Buffer);
      expect(status.details).toEqual([{ code: 4001, message: err.details, requestId: "malformed-reflection" }]);
      expect(logLinesOf(svc, "malformed-reflection")[0]).toMatchObject({ level: 30, code: 4001 });
    });

    it("invalid UTF-8 in a protobuf string is refused naming the field", async () => {
      const bytes = new BinaryWriter().tag(1, 2).bytes(new Uint8Array([0x61, 0xff, 0x62])).finish();
      const err = await grpcJsCall(svc.port, BATCH_GET_RPC, bytes, bearer);
      expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toBe("department_ids[0]: not valid UTF-8");
    });

    it("a field sent with another wire type is refused naming the field and both types, nested ones by their path", async () => {
      const varint = new BinaryWriter().tag(1, 0).int32(1).finish(); // department_ids as a number
      expect((await grpcJsCall(svc.port, BATCH_GET_RPC, varint, bearer)).details)
        .toBe("department_ids: sent as a varint, where this field takes length-delimited bytes");
      // ExportUsageRequest.start_time (field 1, int64) as 8 fixed bytes.
      const fixed = new BinaryWriter().tag(1, 1).fixed64(5n).finish();
      expect((await grpcJsServerStream(svc.port, EXPORT_RPC, fixed, bearer)).details).toBe("start_time: sent as 8 fixed bytes, where this field takes a varint");
      // As length-delimited "abc": protobuf's decoder takes the length for the number and "abc" for fields it does not know.
      const text = new BinaryWriter().tag(1, 2).string("abc").tag(2, 0).int64(1_795_392_000).finish();
      expect((await grpcJsServerStream(svc.port, EXPORT_RPC, text, bearer)).details).toBe("start_time: sent as length-delimited bytes, where this field takes a varint");
      // Bytes the decoder reads whole, leaving nothing unknown: a number as length-delimited bytes that are themselves a field (end_time),
      // and as an empty group (read from the group's end tag). protobuf-es took both without an error.
      const known = new BinaryWriter().tag(1, 2).bytes(new BinaryWriter().tag(2, 0).int64(1_795_392_000).finish()).tag(2, 0).int64(1_795_392_000).finish();
      expect((await grpcJsServerStream(svc.port, EXPORT_RPC, known, bearer)).details).toBe("start_time: sent as length-delimited bytes, where this field takes a varint");
      const group = new BinaryWriter().tag(1, 3).tag(1, 4).tag(2, 0).int64(1_795_392_000).finish();
      expect((await grpcJsServerStream(svc.port, EXPORT_RPC, group, bearer)).details).toBe("start_time: sent as a group, where this field takes a varint");
    });
  });

  describe("text that does not survive storage is refused naming the field", () => {
    const createEnv = (body: string) => post("/api/v1/environment_configs", body);

    it("a lone surrogate in a REST string", async () => {
      const res = await createEnv('{"name":"lone-\\ud800"}');
      expect(res.status).toBe(400);
      expect(json(res).message).toBe("name: not valid Unicode text (a lone surrogate or invalid UTF-8)");
    });

    it("invalid UTF-8 bytes in a REST body", async () => {
      const body = Buffer.concat([Buffer.from('{"name":"ok","description":"bad '), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
      const res = await createEnv(body as unknown as string);
      expect(res.status).toBe(400);
      expect(json(res).message).toBe("description: not valid Unicode text (a lone surrogate or invalid UTF-8)");
    });

    it("U+0000 in a protobuf string, over gRPC", async () => {
      const bytes = toBinary(BatchGetDepartmentsRequestSchema, create(BatchGetDepartmentsRequestSchema, { departmentIds: ["a\u0000b"] }));
      const err = await grpcJsCall(svc.port, BATCH_GET_RPC, bytes, bearer);
      expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toBe("department_ids[0]: must not contain the NUL character (U+0000)");
    });

    it.each([
      ["an unknown field", "/openapi/v1/departments/batch-get", '{"department_ids":["110"],"x\\u0000y":1}', "x\u0000y: unknown field"],
      ["a map key", "/api/v1/environment_configs", '{"name":"nul-key","environment_variables":{"A\\u0000B":"v"}}', 'environment_variables key "A\\u0000B": must not contain the NUL character (U+0000)'],
    ])("U+0000 inside %s: the message quotes the key as sent", async (_where, path, body, message) => {
      const res = await post(path, body);
      expect(res.status).toBe(400);
      expect(json(res).message).toBe(message);
    });

    it.each([
      ["a path value", "/api/v1/environment_configs/%ff", "id: not percent-encoded UTF-8 in the path"],
      ["a path value cut short", "/openapi/v1/departments/ab%e2%82/children", "department_id: not percent-encoded UTF-8 in the path"],
      ["a query value", "/openapi/v1/departments/search?query=%ff", "query: not percent-encoded UTF-8 in the query"],
      ["a query value (an escape cut short)", "/api/v1/environment_configs?page_size=1&page_token=%e2%82", "page_token: not percent-encoded UTF-8 in the query"],
      ["a query parameter's name", "/openapi/v1/statistics/core-metrics?%ff=1", "a query parameter's name: not percent-encoded UTF-8"],
      ["a query with an empty name", "/openapi/v1/departments/search?=x", '"": unknown query parameter'],
      ["a query after a second ?", "/openapi/v1/departments/search??query=a", "?query: unknown query parameter"],
    ])("a bad escape or name in %s is 400 naming it (a bad escape was 404 no route, or read as U+FFFD; ??query was read as query)", async (_where, path, message) => {
      const res = await fetch(`${svc.baseUrl}${path}`, { headers: { authorization: bearer } });
      expect([res.status, ((await res.json()) as { code: number; message: string })]).toMatchObject([400, { code: 4001, message }]);
    });

    it("a good escape in a path value or the query is decoded", async () => {
      const res = await fetch(`${svc.baseUrl}/openapi/v1/departments/%31%310/children?page_size=%31`, { headers: { authorization: bearer } });
      const answer = (await res.json()) as { code: number; data: { items: { parent_department_id: string }[] } };
      expect([res.status, answer.code, answer.data.items.map((d) => d.parent_department_id)]).toStrictEqual([200, 0, ["110"]]);
    });

    it("a string starting with U+0000 is not read as a number", async () => {
      const res = await post("/openapi/v1/statistics/user-model-usage", '{"user_ids":["7001"],"start_time":"\\u00001730073600","end_time":1730160000}');
      expect(res.status).toBe(400);
      expect(json(res).message).toBe("start_time: expected an integer");
    });
  });

  describe("__proto__ as a variable or secret name is stored and returned verbatim", () => {
    it.each([
      ["an environment variable", '{"name":"proto-variable","environment_variables":{"__proto__":"v","B":"b"}}', [["__proto__", "v"], ["B", "b"]], []],
      ["a secret", '{"name":"proto-secret","secrets":{"__proto__":"s","B":"b"}}', [], ["B", "__proto__"]],
    ])("%s: REST create, then get (the body is written by hand: in a JS object literal __proto__ sets the prototype)",
      async (_kind, body, variables, secretKeys) => {
        const created = await post("/api/v1/environment_configs", body);
        expect(json(created)).toMatchObject({ code: 0, message: "success" });
        type Record = { id: string; environment_variables: { [key: string]: string }; secret_keys: string[] };
        const data = json(created).data as Record;
        expect(Object.entries(data.environment_variables)).toEqual(variables);
        expect(data.secret_keys).toEqual(secretKeys);
        const got = await fetch(`${svc.baseUrl}/api/v1/environment_configs/${data.id}`, { headers: { authorization: bearer } });
        const stored = ((await got.json()) as { data: Record }).data;
        expect(Object.entries(stored.environment_variables)).toEqual(variables);
        expect(stored.secret_keys).toEqual(secretKeys);
      });
  });

  describe("the same field twice is refused", () => {
    it("snake_case and lowerCamelCase", async () => {
      const res = await post("/openapi/v1/departments/batch-get", '{"department_ids":["111"],"departmentIds":["121"]}');
      expect(res.status).toBe(400);
      expect(json(res).message).toBe("departmentIds: the same field as department_ids; send it once");
    });

    it("the same key twice", async () => {
      const res = await post("/openapi/v1/departments/batch-get", '{"department_ids":["111"],"department_ids":["121"]}');
      expect(res.status).toBe(400);
      expect(json(res).message).toBe("department_ids: given twice; send it once");
    });

    it("over Connect JSON too", async () => {
      const res = await post(BATCH_GET_RPC, '{"department_ids":["111"],"departmentIds":["121"]}');
      expect(res.status).toBe(400);
      expect(json(res).message).toBe("departmentIds: the same field as department_ids; send it once");
    });
  });

  describe("e-mail matching is case-insensitive by one-to-one case pairs, with no cross-character folds", () => {
    it("the Kelvin sign does not match k; ASCII case does, and so does É with é", async () => {
      await importDirectory(svc.database, {
        ...acme, members: [...acme.members,
          { user_id: "7003", email: "kate@acme.example", account_type: 1, department_ids: ["111"] },
          { user_id: "7004", email: "\u00E9lodie@acme.example", account_type: 1, department_ids: ["111"] }],
      });
      const kelvin = "\u212Aate@acme.example";
      const res = await post("/openapi/v1/statistics/user-model-usage",
        JSON.stringify({ emails: [kelvin, "KATE@ACME.EXAMPLE", "\u00C9LODIE@ACME.EXAMPLE"], start_time: 1_730_073_600, end_time: 1_730_160_000 }));
      expect(res.status).toBe(200);
      const data = json(res).data as { items: { user_id: string }[]; not_found_emails: string[] };
      expect(data.items.map((i) => i.user_id)).toEqual(["7003", "7004"]);
      expect(data.not_found_emails).toEqual([kelvin]);
    });
  });

  describe("a token in the query string", () => {
    it("?access_token= answers 401 (1002) saying where the token goes", async () => {
      const res = await fetch(`${svc.baseUrl}/api/v1/environment_configs?access_token=secret-token-value`);
      expect(res.status).toBe(401);
      const body = await res.json() as { code: number; message: string };
      expect(body.code).toBe(1002);
      expect(body.message).toBe("access_token: not accepted in the query string; send Authorization: Bearer <access_token>");
      expect(svc.logs.join("\n")).not.toContain("secret-token-value");
    });
  });

  describe("gRPC clients read errors as they are", () => {
    it("grpc-js shows a message with ':' plainly, and the status details decode with the shipped protos", async () => {
      const bytes = toBinary(BatchGetDepartmentsRequestSchema, create(BatchGetDepartmentsRequestSchema, { departmentIds: [] }));
      const err = await grpcJsCall(svc.port, BATCH_GET_RPC, bytes, bearer, "colon-check");
      expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toBe(EMPTY_IDS_MESSAGE);
      expect(decodeStatusDetails(err.metadata.get("grpc-status-details-bin")[0] as Buffer)).toEqual({
        code: grpc.status.INVALID_ARGUMENT,
        message: EMPTY_IDS_MESSAGE,
        details: [{ code: 4001, message: EMPTY_IDS_MESSAGE, requestId: "colon-check" }],
      });
    });

    it("grpc-js shows the 1002 message with ':' and '<>' plainly", async () => {
      const bytes = toBinary(BatchGetDepartmentsRequestSchema, create(BatchGetDepartmentsRequestSchema, { departmentIds: ["x"] }));
      const err = await grpcJsCall(svc.port, BATCH_GET_RPC, bytes);
      expect(err.code).toBe(grpc.status.UNAUTHENTICATED);
      expect(err.details).toBe("access token missing: send Authorization: Bearer <access_token>");
    });
  });

  it("no response above was a 500, and no log line was at error level", () => {
    const lines = svc.logs.map((line) => JSON.parse(line) as LogLine);
    expect(lines.filter((line) => line.level >= 50)).toEqual([]);
    expect(lines.filter((line) => line.status === 500)).toEqual([]);
  });
});
