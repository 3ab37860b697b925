// End to end: the OpenAPI document served at GET /openapi.json is valid OpenAPI 3.1, and every route it
// documents answers the document's own example request, against the demo enterprise of `seed --demo`,
// with the status and the body its response schema says (checked with Ajv, JSON Schema 2020-12).
import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_ENTERPRISE_ID, demoDirectory } from "../../src/demo/directory.js";
import { EXAMPLE_DEMO_TODAY } from "../../src/demo/requests.js";
import { demoUsageEvents } from "../../src/demo/usage.js";
import { checkUsageEvent } from "../../src/domain/usage-event.js";
import { openApiJson } from "../../src/openapi-document.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { recordUsage } from "../../src/operations/record-usage.js";
import { UsageRepository } from "../../src/storage/usage-repository.js";
import { dialects } from "../helpers/databases.js";
import { startTestService, type TestService } from "../helpers/service.js";

type Json = Record<string, any>;
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;

interface Operation {
  path: string;
  method: string;
  op: Json;
}

interface Reply {
  status: number;
  contentType: string;
  text: string;
}

const escapePointer = (part: string) => part.replace(/~/g, "~0").replace(/\//g, "~1");

describe.each(dialects)("the OpenAPI document (%s)", (dialect) => {
  let svc: TestService;
  let token: string;
  let doc: Json;
  let ajv: Ajv2020;

  beforeAll(async () => {
    svc = await startTestService(dialect);
    await importDirectory(svc.database, demoDirectory);
    const events = demoUsageEvents(EXAMPLE_DEMO_TODAY).map((raw, i) => ({ event: checkUsageEvent(raw, `demo event ${i}`), where: `demo event ${i}` }));
    await recordUsage(new UsageRepository(svc.database), DEMO_ENTERPRISE_ID, events);
    token = await svc.token(undefined, DEMO_ENTERPRISE_ID);
    const response = await fetch(`${svc.baseUrl}/openapi.json`);
    expect(response.status).toBe(200);
    doc = (await response.json()) as Json;
    ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    // The document is not itself a JSON Schema (a parameter's `required` is a boolean): add it unchecked
    // and compile its schemas by JSON pointer.
    ajv.addSchema(doc, "openapi.json", undefined, false);
  });

  afterAll(async () => {
    await svc.close();
  });

  /** The operations, a link's source before its targets and deletions last (they end what the others read). */
  function operations(): Operation[] {
    const all = Object.entries(doc.paths as Json).flatMap(([path, item]) => Object.entries(item as Json).map(([method, op]) => ({ path, method, op: op as Json })));
    const rank = (o: Operation) => (o.op.responses[200]?.links ? 0 : o.method === "delete" ? 2 : 1);
    return all.sort((a, b) => rank(a) - rank(b));
  }

  /** The schema of a response (following the document's own `$ref` to a shared response), compiled. */
  function responseSchema(o: Operation, status: string, mediaType = "application/json") {
    const response = o.op.responses[status];
    expect(response, `${o.method.toUpperCase()} ${o.path} documents ${status}`).toBeDefined();
    const base = response.$ref ? (response.$ref as string).slice(1) : `/paths/${escapePointer(o.path)}/${o.method}/responses/${status}`;
    return ajv.compile({ $ref: `openapi.json#${base}/content/${escapePointer(mediaType)}/schema` });
  }

  function expectValid(validate: ReturnType<Ajv2020["compile"]>, value: unknown, what: string): void {
    const valid = validate(value);
    expect(valid ? [] : validate.errors, `${what}: ${JSON.stringify(value).slice(0, 400)}`).toEqual([]);
  }

  async function call(o: Operation, options: { path?: Json; query?: Json; body?: unknown; authorization?: string | null } = {}): Promise<Reply> {
    let url = o.path;
    for (const [name, value] of Object.entries(options.path ?? {})) url = url.replace(`{${name}}`, encodeURIComponent(String(value)));
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(options.query ?? {})) {
      for (const item of Array.isArray(value) ? value : [value]) query.append(name, String(item));
    }
    const headers: Record<string, string> = {};
    const authorization = options.authorization === undefined ? `Bearer ${token}` : options.authorization;
    if (authorization !== null) headers.authorization = authorization;
    if (options.body !== undefined) headers["content-type"] = "application/json";
    const response = await fetch(`${svc.baseUrl}${url}${query.size > 0 ? `?${query}` : ""}`, {
      method: o.method.toUpperCase(),
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    return { status: response.status, contentType: response.headers.get("content-type") ?? "", text: await response.text() };
  }

  /** The example request of an operation: parameter examples, else values its links gave; the body example. */
  function exampleOf(o: Operation, linked: Map<string, Json>) {
    const path: Json = {};
    const query: Json = {};
    for (const p of (o.op.parameters as Json[]).filter((p) => !p.$ref)) {
      const value = p.example ?? linked.get(o.op.operationId)?.[p.name];
      if (p.in === "path") {
        expect(value, `${o.op.operationId}: a value for {${p.name}}`).toBeDefined();
        path[p.name] = value;
      } else if (value !== undefined) query[p.name] = value;
    }
    const examples = o.op.requestBody?.content["application/json"].examples;
    if (o.op.requestBody) expect(examples, `${o.op.operationId}: an example body (src/demo/requests.ts)`).toBeDefined();
    const body = examples?.demo.value;
    return { path, query, body };
  }

  it("is served without a token, as the generator writes it", async () => {
    const response = await fetch(`${svc.baseUrl}/openapi.json`);
    expect(response.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(response.headers.get("x-request-id")).toMatch(/.+/);
    const text = await response.text();
    expect(text).toBe(openApiJson());
    // fetch asks for gzip by default; HEAD gives the length of what GET would send, here uncompressed.
    const head = await fetch(`${svc.baseUrl}/openapi.json`, { method: "HEAD", headers: { "accept-encoding": "identity" } });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe(String(Buffer.byteLength(text)));
  });

  it("it, /healthz and /readyz answer GET and HEAD; any other method is 405 with Allow: GET, HEAD, as /metrics and the REST routes do", async () => {
    expect(await (await fetch(`${svc.baseUrl}/readyz`)).json()).toStrictEqual({ status: "ready" });
    for (const path of ["/openapi.json", "/healthz", "/readyz"]) {
      expect((await fetch(svc.baseUrl + path, { method: "HEAD" })).status, path).toBe(200);
      for (const method of ["POST", "PUT", "DELETE"]) {
        const response = await fetch(svc.baseUrl + path, { method, headers: { "content-type": "application/json" }, body: "{}" });
        expect([path, method, response.status, response.headers.get("allow")]).toStrictEqual([path, method, 405, "GET, HEAD"]);
        expect(await response.json()).toMatchObject({ code: 4005, message: `method ${method} not allowed on ${path}; allowed: GET, HEAD`, data: null });
      }
    }
  });

  it("is valid OpenAPI 3.1 by @seriousme/openapi-schema-validator (every $ref resolving)", async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  it("documents every route with its permission, its error codes and an example", () => {
    const documented = operations().map((o) => `${o.method.toUpperCase()} ${o.path} ${o.op["x-permission"] ?? (o.op["x-any-token"] ? "any-token" : "public")}`);
    expect(documented.sort()).toEqual([
      "DELETE /api/v1/environment_configs/{id} environments:write",
      "GET /api/v1/environment_configs environments:read",
      "GET /api/v1/environment_configs/supported_versions environments:read",
      "GET /api/v1/environment_configs/{id} environments:read",
      "GET /api/v1/environment_configs/{id}/startup_plan environments:read",
      "GET /openapi/v1/auth/whoami any-token",
      "GET /openapi/v1/departments/search departments:read",
      "GET /openapi/v1/departments/{department_id}/children departments:read",
      "GET /openapi/v1/statistics/core-metrics statistics:read",
      "GET /openapi/v1/statistics/usage-export statistics:read",
      "PATCH /api/v1/environment_configs/{id} environments:write",
      "POST /api/v1/environment_configs environments:write",
      "POST /openapi/v1/auth/token public",
      "POST /openapi/v1/departments/batch-get departments:read",
      "POST /openapi/v1/statistics/usage-report statistics:read",
      "POST /openapi/v1/statistics/user-model-usage statistics:read",
      "POST /openapi/v1/usage/events/batch-record usage:write",
    ]);
    const statuses = (o: Operation) => Object.keys(o.op.responses).join(" ");
    const byId = Object.fromEntries(operations().map((o) => [o.op.operationId, o]));
    expect(statuses(byId.CreateAccessToken!)).toBe("200 400 401 413 415 429 500 503 504");
    expect(byId.CreateAccessToken!.op.security).toEqual([]);
    expect(statuses(byId.GetEnvironmentConfig!)).toBe("200 400 401 403 404 429 500 503 504");
    expect(statuses(byId.UpdateEnvironmentConfig!)).toBe("200 400 401 403 404 409 413 415 429 500 503 504");
    expect(byId.UpdateEnvironmentConfig!.op.responses[409]).toEqual({ $ref: "#/components/responses/Error4091_4092" });
    expect(doc.components.responses.Error4091_4092.content["application/json"].schema.properties.code).toEqual({ enum: [4091, 4092] });
    expect(byId.ExportUsage!.op.responses[200].content).toHaveProperty(["text/csv; charset=utf-8"]);
    expect(byId.ExportUsage!.op.responses[200].content).toHaveProperty(["application/x-ndjson"]);
  });

  it("every route answers its own example with 200 and the documented body", async () => {
    const linked = new Map<string, Json>();
    const answered: string[] = [];
    for (const o of operations()) {
      const what = `${o.method.toUpperCase()} ${o.path}`;
      const example = exampleOf(o, linked);
      if (o.op.operationId === "CreateAccessToken") {
        // The example's credentials stand for the ones `app create` prints once: as written they are
        // refused as the document says (401, 1001); a real app's are exchanged for a token.
        const refused = await call(o, { ...example, authorization: null });
        expect(refused.status, what).toBe(401);
        expectValid(responseSchema(o, "401"), JSON.parse(refused.text), `${what} 401`);
        expect(JSON.parse(refused.text).code).toBe(1001);
        const app = await svc.access.createApp(DEMO_ENTERPRISE_ID, ["departments:read"]);
        example.body = { app_id: app.app_id, app_secret: app.app_secret };
      }
      const reply = await call(o, { ...example, authorization: o.op.security?.length === 0 ? null : undefined });
      expect(reply.status, `${what}: ${reply.text.slice(0, 300)}`).toBe(200);
      answered.push(o.op.operationId);
      if (o.op.responses[200].content["application/json"]) {
        const body = JSON.parse(reply.text);
        expectValid(responseSchema(o, "200"), body, what);
        for (const [target, link] of Object.entries((o.op.responses[200].links ?? {}) as Json)) {
          const values = Object.fromEntries(Object.entries(link.parameters as Json).map(([name, expression]) => {
            const pointer = (expression as string).replace("$response.body#", "").split("/").slice(1);
            return [name, pointer.reduce((value: any, key) => value?.[key], body)];
          }));
          linked.set(target, values);
        }
        checkFigures(o.op.operationId, body.data);
      } else {
        // The export: NDJSON by the example, each line a record of the documented schema.
        expect(reply.contentType).toBe("application/x-ndjson");
        const record = ajv.compile({ $ref: `openapi.json#/paths/${escapePointer(o.path)}/get/responses/200/content/application~1x-ndjson/x-record-schema` });
        const lines = reply.text.split("\n").filter(Boolean);
        expect(lines.length).toBeGreaterThan(0);
        for (const line of lines) expectValid(record, JSON.parse(line), `${what} record`);
        // The other documented format: CSV whose header line is the documented one.
        const csv = await call(o, { ...example, query: { ...example.query, format: "csv" } });
        expect(csv.contentType).toBe("text/csv; charset=utf-8");
        expect(csv.text.startsWith(o.op.responses[200].content["text/csv; charset=utf-8"].example)).toBe(true);
        expect(csv.text.split("\r\n").filter(Boolean)).toHaveLength(lines.length + 1);
      }
    }
    expect(answered).toHaveLength(17);
  });

  /** The examples ask about real demo data: the answers are not empty. */
  function checkFigures(operationId: string, data: Json): void {
    switch (operationId) {
      case "QueryUserModelUsage":
        expect(data.items.map((i: Json) => i.user_id)).toEqual(["7001", "7002", "7003"]);
        expect(data.items.every((i: Json) => i.model_usage.length > 0)).toBe(true);
        expect(data.not_found_emails).toEqual(["nobody@demo.example"]);
        break;
      case "WhoAmI":
        expect(data).toMatchObject({ enterprise_id: "demo", app_id: "" });
        break;
      case "BatchGetDepartments":
        expect(data.items.map((d: Json) => d.full_path)).toEqual(["Demo Corp/Engineering", "Demo Corp/Sales/Sales East"]);
        expect(data.not_found_department_ids).toEqual(["999"]);
        break;
      case "GetUsageReport":
        expect(data.buckets).toHaveLength(7);
        expect(data.buckets.flatMap((b: Json) => b.groups).length).toBeGreaterThan(0);
        break;
      case "GetCoreMetrics":
        expect(data.items).toHaveLength(7);
        break;
      case "RecordUsageEvents":
        expect(data).toEqual({ recorded: 1, duplicates: 0 });
        break;
      case "CreateEnvironmentConfig":
        expect(data.secret_keys).toEqual(["WAREHOUSE_PASSWORD"]);
        break;
      case "UpdateEnvironmentConfig":
        expect(data.secret_keys).toEqual(["DBT_CLOUD_TOKEN", "WAREHOUSE_PASSWORD"]);
        break;
    }
  }

  it("without a token every route but the token exchange answers its documented 401 (1002)", async () => {
    for (const o of operations().filter((o) => o.op.security?.length !== 0)) {
      const reply = await call(o, { ...exampleOf(o, new Map([[o.op.operationId, { id: "env_unknown" }]])), authorization: null });
      expect(reply.status, o.path).toBe(401);
      expectValid(responseSchema(o, "401"), JSON.parse(reply.text), `${o.method} ${o.path} 401`);
    }
  });

  it("with a token that lacks the permission every route answers its documented 403 (30017)", async () => {
    const weak = await svc.token(["usage:write"], DEMO_ENTERPRISE_ID);
    for (const o of operations().filter((o) => o.op["x-permission"] && o.op["x-permission"] !== "usage:write")) {
      const reply = await call(o, { ...exampleOf(o, new Map([[o.op.operationId, { id: "env_unknown" }]])), authorization: `Bearer ${weak}` });
      expect(reply.status, o.path).toBe(403);
      expectValid(responseSchema(o, "403"), JSON.parse(reply.text), `${o.method} ${o.path} 403`);
      expect(JSON.parse(reply.text).message).toContain(o.op["x-permission"]);
    }
  });

  it("an unknown environment config is its documented 404 (4041), an unknown body field its documented 400 (4001)", async () => {
    const byId = Object.fromEntries(operations().map((o) => [o.op.operationId, o]));
    const missing = await call(byId.GetEnvironmentConfig!, { path: { id: "env_unknown" } });
    expect(missing.status).toBe(404);
    expectValid(responseSchema(byId.GetEnvironmentConfig!, "404"), JSON.parse(missing.text), "404");
    const batchGet = byId.BatchGetDepartments!;
    const bad = await call(batchGet, { body: { ...batchGet.op.requestBody.content["application/json"].examples.demo.value, container_image: "x" } });
    expect(bad.status).toBe(400);
    expectValid(responseSchema(batchGet, "400"), JSON.parse(bad.text), "400");
    // The request schema refuses what the server refuses.
    const requestSchema = ajv.compile({ $ref: `openapi.json#/paths/${escapePointer(batchGet.path)}/post/requestBody/content/application~1json/schema` });
    expect(requestSchema({ department_ids: ["110"], container_image: "x" })).toBe(false);
    expect(requestSchema({ department_ids: [] })).toBe(false);
    expect(requestSchema({ department_ids: ["110"] })).toBe(true);
  });
});
