// End to end: reflection and health over a real h2c server, seen by grpc-js, buf curl and the Connect gRPC client.
import { execFile } from "node:child_process";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { promisify } from "node:util";
import { fromBinary, toBinary, create } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { createClient, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService, file_enterprise_admin_v1_auth } from "../../gen/enterprise_admin/v1/auth_pb.js";
import { DepartmentService, file_enterprise_admin_v1_department } from "../../gen/enterprise_admin/v1/department_pb.js";
import {
  Health,
  HealthCheckRequestSchema,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
  type HealthCheckResponse,
} from "../../gen/grpc/health/v1/health_pb.js";
import {
  ServerReflection as ServerReflectionV1alpha,
  type ServerReflectionResponse,
} from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { HealthState, registerHealth } from "../../src/services/health-service.js";
import { registerReflection } from "../../src/services/reflection-service.js";

const run = promisify(execFile);
const BUF = new URL("../../node_modules/.bin/buf", import.meta.url).pathname;

let server: http2.Http2Server;
const sessions = new Set<http2.ServerHttp2Session>();
let baseUrl = "";
const health = new HealthState([DepartmentService.typeName, AuthService.typeName]);

beforeAll(async () => {
  const routes = (router: ConnectRouter): void => {
    registerReflection(router, [file_enterprise_admin_v1_department, file_enterprise_admin_v1_auth]);
    registerHealth(router, health);
  };
  server = http2.createServer(connectNodeAdapter({ routes }));
  server.on("session", (s) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  health.setAllNotServing();
  // server.close() waits for open sessions; clients keep theirs alive, so close them here.
  for (const s of sessions) s.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function bufCurl(...args: string[]): Promise<string> {
  const { stdout } = await run(BUF, ["curl", "--http2-prior-knowledge", "--protocol", "grpc", ...args], {
    timeout: 30_000,
  });
  return stdout;
}

describe("health", () => {
  it("answers grpc-js Check with SERVING", async () => {
    const client = new grpc.Client(baseUrl.replace("http://", ""), grpc.credentials.createInsecure());
    try {
      const check = (service: string) =>
        new Promise<HealthCheckResponse>((resolve, reject) =>
          client.makeUnaryRequest(
            "/grpc.health.v1.Health/Check",
            (req: { service: string }) => Buffer.from(toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema, req))),
            (buf: Buffer) => fromBinary(HealthCheckResponseSchema, buf),
            { service },
            (err, res) => (err || !res ? reject(err) : resolve(res)),
          ),
        );
      expect((await check("")).status).toBe(ServingStatus.SERVING);
      expect((await check(DepartmentService.typeName)).status).toBe(ServingStatus.SERVING);
      await expect(check("no.such.Service")).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
    } finally {
      client.close();
    }
  });
});

describe("HealthState", () => {
  it("ends Watch after reporting NOT_SERVING on shutdown, and on abort", async () => {
    const state = new HealthState(["a.Service"]);
    const watched: ServingStatus[] = [];
    const done = (async () => {
      for await (const s of state.watch("a.Service", new AbortController().signal)) watched.push(s);
    })();
    await new Promise((r) => setTimeout(r, 10));
    state.setAllNotServing();
    await done;
    expect(watched).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING]);

    const abort = new AbortController();
    const stream = new HealthState().watch("", abort.signal);
    expect((await stream.next()).value).toBe(ServingStatus.SERVING);
    const next = stream.next();
    abort.abort();
    expect((await next).done).toBe(true);
  });
});

describe("reflection via the Connect gRPC client (v1alpha)", () => {
  it("resolves methods, fields, extensions and reports unknown symbols as NOT_FOUND", async () => {
    const client = createClient(ServerReflectionV1alpha, createGrpcTransport({ baseUrl }));
    async function* requests() {
      yield { messageRequest: { case: "fileContainingSymbol" as const, value: "enterprise_admin.v1.DepartmentService.BatchGetDepartments" } };
      yield { messageRequest: { case: "fileContainingSymbol" as const, value: "enterprise_admin.v1.Department.full_path" } };
      yield { messageRequest: { case: "fileContainingExtension" as const, value: { containingType: "google.protobuf.MethodOptions", extensionNumber: 51003 } } };
      yield { messageRequest: { case: "allExtensionNumbersOfType" as const, value: "google.protobuf.MethodOptions" } };
      yield { messageRequest: { case: "fileByFilename" as const, value: "google/protobuf/descriptor.proto" } };
      yield { messageRequest: { case: "fileContainingSymbol" as const, value: "no.such.Symbol" } };
      // Every error carries an ErrorDetail: buf curl and grpcurl decode it by the schema reflection gives.
      yield { messageRequest: { case: "fileContainingSymbol" as const, value: "enterprise_admin.v1.ErrorDetail" } };
    }
    const responses: ServerReflectionResponse["messageResponse"][] = [];
    for await (const res of client.serverReflectionInfo(requests())) responses.push(res.messageResponse);
    const fileNames = (r: (typeof responses)[number]) =>
      r.case === "fileDescriptorResponse"
        ? r.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b).name)
        : [];

    expect(fileNames(responses[0]!)[0]).toBe("enterprise_admin/v1/department.proto");
    expect(fileNames(responses[0]!)).toEqual(
      expect.arrayContaining(["enterprise_admin/v1/options.proto", "google/protobuf/descriptor.proto", "buf/validate/validate.proto"]),
    );
    expect(fileNames(responses[1]!)[0]).toBe("enterprise_admin/v1/department.proto");
    expect(fileNames(responses[2]!)[0]).toBe("enterprise_admin/v1/options.proto");
    expect(responses[3]).toMatchObject({ case: "allExtensionNumbersResponse", value: { baseTypeName: "google.protobuf.MethodOptions" } });
    expect(responses[3]!.case === "allExtensionNumbersResponse" && responses[3]!.value.extensionNumber).toContain(51003);
    expect(fileNames(responses[4]!)).toEqual(["google/protobuf/descriptor.proto"]);
    expect(responses[5]).toMatchObject({ case: "errorResponse", value: { errorCode: 5 } });
    expect(fileNames(responses[6]!)[0]).toBe("enterprise_admin/v1/errors.proto");
  });
});

describe("reflection via buf curl", () => {
  for (const reflectProtocol of ["grpc-v1", "grpc-v1alpha"]) {
    it(`${reflectProtocol}: lists services`, async () => {
      const out = await bufCurl("--reflect-protocol", reflectProtocol, "--list-services", baseUrl);
      expect(out.split("\n")).toEqual(
        expect.arrayContaining([
          "enterprise_admin.v1.DepartmentService",
          "enterprise_admin.v1.AuthService",
          "grpc.health.v1.Health",
          "grpc.reflection.v1.ServerReflection",
          "grpc.reflection.v1alpha.ServerReflection",
        ]),
      );
    });

    it(`${reflectProtocol}: lists methods (resolves every service's file and its imports)`, async () => {
      const out = await bufCurl("--reflect-protocol", reflectProtocol, "--list-methods", baseUrl);
      const methods = out.split("\n");
      for (const m of DepartmentService.methods) expect(methods).toContain(`${DepartmentService.typeName}/${m.name}`);
      expect(methods).toContain("grpc.health.v1.Health/Check");
    });

    it(`${reflectProtocol}: invokes Health/Check with the schema taken from reflection`, async () => {
      const out = await bufCurl("--reflect-protocol", reflectProtocol, "-d", "{}", `${baseUrl}/grpc.health.v1.Health/Check`);
      expect(JSON.parse(out)).toEqual({ status: "SERVING" });
    });
  }
});

// Last: it puts the server's health into shutdown.
describe("health at shutdown", () => {
  it("answers the Connect gRPC transport, and Watch streams changes until the shutdown ends it", async () => {
    // connect-node's gRPC transport is HTTP/2-only, so there is no httpVersion option to set.
    const client = createClient(Health, createGrpcTransport({ baseUrl }));
    expect((await client.check({ service: DepartmentService.typeName })).status).toBe(ServingStatus.SERVING);
    expect((await client.list({})).statuses[AuthService.typeName]?.status).toBe(ServingStatus.SERVING);

    const seen: ServingStatus[] = [];
    for await (const res of client.watch({ service: DepartmentService.typeName })) {
      seen.push(res.status);
      if (seen.length === 1) health.setAllNotServing();
    }
    expect(seen).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING]);
  });
});
