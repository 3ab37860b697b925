// The OpenAPI 3.1 document of the REST facade, built from what the facade routes by: the served
// services' google.api.http rules (http-rules.ts), their messages (openapi-schemas.ts), each method's
// (access) and (method_errors) options, the ErrorCode table and the proto's comments. Only the example
// requests come from outside (the demo data). Knows no service: a new annotated RPC is documented with
// no change here.
import { getOption, type DescField, type DescMethod, type DescService } from "@bufbuild/protobuf";
import { EnvelopeSchema, ErrorCodeSchema } from "../../gen/enterprise_admin/v1/errors_pb.js";
import { method_errors as methodErrorsOption } from "../../gen/enterprise_admin/v1/options_pb.js";
import { ErrorCode } from "../domain/errors.js";
import { ERROR_TABLE } from "../error-table.js";
import { methodAccess } from "../interceptors/auth.js";
import { SANE_REQUEST_ID } from "../interceptors/request-id.js";
import { RestRouter, type RestRoute } from "./http-rules.js";
import { isRequiredIn, MessageSchemas, type JsonSchema } from "./openapi-schemas.js";
import type { ProtoComments } from "./proto-comments.js";
import { CONTENT_TYPES, recordsField } from "./record-formats.js";
import { MAX_BODY_BYTES } from "./rest-facade.js";

export interface RequestExample {
  /** A line on what the example asks. */
  summary: string;
  /** Path variables by field name; a variable left out is filled from another call (an OpenAPI link). */
  path?: Record<string, string>;
  query?: Record<string, string | number | string[]>;
  body?: Record<string, unknown>;
}

export interface OpenApiSources {
  services: readonly DescService[];
  comments: ProtoComments;
  /** One example request per routed method. */
  examples: ReadonlyMap<DescMethod, RequestExample>;
}

type Json = Record<string, unknown>;

const ENVELOPE = "Envelope";
const ERROR_ENVELOPE = "ErrorEnvelope";
const REQUEST_ID_HEADER = { $ref: "#/components/headers/RequestId" };
const RETRY_AFTER_HEADER = { $ref: "#/components/headers/RetryAfter" };

/** What any call can meet, whatever its method. */
const EVERY_CALL = [ErrorCode.INVALID_PARAMETER, ErrorCode.RATE_LIMITED, ErrorCode.INTERNAL, ErrorCode.UNAVAILABLE, ErrorCode.DEADLINE_EXCEEDED];
const WITH_TOKEN = [ErrorCode.INVALID_ACCESS_TOKEN, ErrorCode.PERMISSION_DENIED];
const WITH_BODY = [ErrorCode.BODY_TOO_LARGE, ErrorCode.UNSUPPORTED_MEDIA_TYPE];
/** Answers with a Retry-After header. */
const RETRY_AFTER = new Set<number>([ErrorCode.RATE_LIMITED, ErrorCode.UNAVAILABLE]);

export function buildOpenApi({ services, comments, examples }: OpenApiSources): Json {
  const schemas = new MessageSchemas(comments);
  const errorResponses = new Map<string, Json>();
  const routes = [...new RestRouter(services).list()].sort((a, b) => compare(a.pattern, b.pattern) || compare(a.httpMethod, b.httpMethod));
  const paths: Record<string, Record<string, Json>> = {};
  for (const route of routes) {
    // A route without an example is still documented; the document's test asks for one.
    (paths[route.pattern] ??= {})[route.httpMethod.toLowerCase()] = operation(route, examples.get(route.method), schemas, comments, errorResponses);
  }
  addLinks(routes, paths);
  return {
    openapi: "3.1.0",
    info: {
      title: "Enterprise Admin Service REST API",
      version: services[0]?.file.proto.package.split(".").pop() ?? "v1",
      description: INFO_DESCRIPTION,
    },
    servers: [{ url: "/", description: "the server that serves this document" }, { url: "http://127.0.0.1:8080", description: "`enterprise-admin serve` on its default port" }],
    security: [{ bearerAuth: [] }],
    tags: services.filter((s) => routes.some((r) => r.method.parent === s)).map((s) => withDescription({ name: s.name }, comments.of(s))),
    paths,
    components: {
      securitySchemes: {
        bearerAuth: {
          type: "http",
          scheme: "bearer",
          description: "An access token from POST /openapi/v1/auth/token (or `enterprise-admin token create`), sent as `Authorization: Bearer <access_token>`. It carries its app's permissions; each operation names the one it needs (`x-permission`).",
        },
      },
      parameters: {
        RequestId: {
          name: "x-request-id",
          in: "header",
          required: false,
          description: "Your own request id, kept when it is 1 to 128 printable ASCII characters without spaces; otherwise the server makes one (a UUID). Every answer carries it in `x-request-id` and the envelope's `request_id`.",
          schema: { type: "string", pattern: SANE_REQUEST_ID.source },
        },
      },
      headers: {
        RequestId: { description: "The request id, also the envelope's `request_id`.", schema: { type: "string" } },
        RetryAfter: { description: "Seconds to wait before retrying.", schema: { type: "integer", minimum: 0 } },
      },
      responses: Object.fromEntries([...errorResponses].sort(([a], [b]) => compare(a, b))),
      schemas: { ...envelopeSchemas(comments), ...schemas.components() },
    },
  };
}

const INFO_DESCRIPTION = `Every route answers in one envelope: \`{"code":0,"message":"success","request_id":"…","data":{…}}\` on success, \`{"code":N,"message":"…","request_id":"…","data":null}\` on error, with the HTTP status of the code (the codes and statuses of each operation are listed with it; all of them are in docs/errors.md). The usage export answers with CSV or NDJSON records instead.

Field names are the proto field names. Every field of a response is present, zero values included. 64-bit integers are exact JSON numbers; a request may also send any integer as a numeric string. Amounts are decimal strings with exactly 6 decimals. Unknown request fields are refused (4001). A POST or PATCH body must be \`application/json\` (else 415), at most ${MAX_BODY_BYTES} bytes (else 413). An unknown path under /openapi/ or /api/ is 404 (code ${ErrorCode.ROUTE_NOT_FOUND}); a known path with the wrong method is 405 (${ErrorCode.METHOD_NOT_ALLOWED}) with an \`Allow\` header.

\`GET /openapi.json\` serves this document and \`GET /healthz\` the health check, both without a token. The same operations are served over Connect, gRPC and gRPC-Web at each operation's \`x-rpc\` path, with the same error codes as an \`enterprise_admin.v1.ErrorDetail\` error detail.`;

function operation(route: RestRoute, example: RequestExample | undefined, schemas: MessageSchemas, comments: ProtoComments, errorResponses: Map<string, Json>): Json {
  const method = route.method;
  const access = methodAccess(method);
  const comment = comments.of(method);
  const pathFields = route.segments.flatMap((s) => ("field" in s ? [s.field] : []));
  const rpcPath = `/${method.parent.typeName}/${method.name}`;
  const description = [
    comment,
    access.public ? "Needs no access token." : access.anyToken ? "Needs an access token, whatever its permissions." : `Permission: \`${access.permission}\`.`,
    `RPC: \`${rpcPath}\` (Connect, gRPC, gRPC-Web).`,
    // A body example carries its own summary; the parameters' examples are described here.
    example && route.body === "" ? `Example (the parameters' \`example\` values): ${example.summary}.` : "",
  ].filter(Boolean).join("\n\n");

  const parameters: Json[] = pathFields.map((field) => parameter(field, "path", example?.path?.[field.name], schemas, comments));
  if (route.body === "") {
    for (const field of method.input.fields) {
      if (pathFields.includes(field) || !queryable(field)) continue;
      parameters.push(parameter(field, "query", example?.query?.[field.name], schemas, comments));
    }
  }
  if (example) checkExample(route, example, parameters);
  parameters.push({ $ref: "#/components/parameters/RequestId" });

  const tokenCodes = access.public ? [] : access.anyToken ? [ErrorCode.INVALID_ACCESS_TOKEN] : WITH_TOKEN;
  const codes = [...EVERY_CALL, ...tokenCodes, ...(route.body === "*" ? WITH_BODY : []), ...getOption(method, methodErrorsOption)];
  const responses: Json = { 200: success(route, schemas) };
  for (const [status, statusCodes] of byStatus(codes)) {
    const name = `Error${statusCodes.join("_")}`;
    if (!errorResponses.has(name)) errorResponses.set(name, errorResponse(statusCodes));
    responses[status] = { $ref: `#/components/responses/${name}` };
  }

  return {
    operationId: method.name,
    tags: [method.parent.name],
    summary: firstSentence(comment) || method.name,
    description,
    ...(access.public ? { security: [] } : access.anyToken ? { "x-any-token": true } : { "x-permission": access.permission }),
    "x-rpc": rpcPath,
    parameters,
    ...(route.body === "*" ? {
      requestBody: {
        required: true,
        content: {
          "application/json": {
            schema: pathFields.length > 0 ? schemas.object(method.input, "in", pathFields) : schemas.ref(method.input, "in"),
            ...(example ? { examples: { demo: { summary: example.summary, value: example.body ?? {} } } } : {}),
          },
        },
      },
    } : {}),
    responses,
  };
}

/** A top-level scalar or list of scalars: what the facade reads from the query string. */
const queryable = (field: DescField) => field.fieldKind === "scalar" || (field.fieldKind === "list" && field.listKind === "scalar");

function parameter(field: DescField, where: "path" | "query", example: unknown, schemas: MessageSchemas, comments: ProtoComments): Json {
  return {
    name: field.name,
    in: where,
    required: where === "path" || isRequiredIn(field),
    ...withDescription({}, comments.of(field)),
    schema: schemas.parameter(field),
    ...(field.fieldKind === "list" ? { style: "form", explode: true } : {}),
    ...(example !== undefined ? { example } : {}),
  };
}

/** An example names only parameters and body fields the route has, and gives every required one. */
function checkExample(route: RestRoute, example: RequestExample, parameters: Json[]): void {
  const where = `example of ${route.httpMethod} ${route.pattern}`;
  for (const [kind, values] of [["path", example.path], ["query", example.query]] as const) {
    for (const name of Object.keys(values ?? {})) {
      if (!parameters.some((p) => p.in === kind && p.name === name)) throw new Error(`${where}: no ${kind} parameter ${name}`);
    }
  }
  for (const p of parameters) {
    if (p.in === "query" && p.required && example.query?.[p.name as string] === undefined) throw new Error(`${where}: required query parameter ${p.name} has no value`);
  }
  if ((example.body !== undefined) !== (route.body === "*")) throw new Error(`${where}: ${route.body === "*" ? "needs" : "cannot have"} a body`);
}

function success(route: RestRoute, schemas: MessageSchemas): Json {
  const method = route.method;
  const headers = { "x-request-id": REQUEST_ID_HEADER };
  if (method.methodKind === "server_streaming") {
    const records = recordsField(method.output);
    const row = schemas.ref(records.message, "out");
    return {
      description: `The records, streamed: CSV (RFC 4180, CRLF line ends, a header line of the field names; a list is its values joined by " | ") or NDJSON (one JSON object a line), by the \`format\` parameter. An error before the first record is the usual error envelope; a failure after it cuts the body short.`,
      headers: {
        ...headers,
        "Content-Disposition": {
          description: "`attachment; filename=\"usage-<first date>-<last date>.<csv|ndjson>\"`: the local dates of the window's first and last second.",
          schema: { type: "string" },
        },
        "Content-Encoding": { description: "`gzip` when the request's `Accept-Encoding` takes it; absent otherwise.", schema: { type: "string", enum: ["gzip"] } },
        Vary: { description: "`Accept-Encoding`, either way.", schema: { type: "string" } },
      },
      content: {
        [CONTENT_TYPES.csv]: {
          schema: { type: "string" },
          example: `${records.message.fields.map((f) => f.name).join(",")}\r\n`,
        },
        [CONTENT_TYPES.ndjson]: {
          schema: { type: "string", description: "One JSON object a line, each as `x-record-schema`." },
          "x-record-schema": row,
        },
      },
    };
  }
  return {
    description: "Success.",
    headers,
    content: {
      "application/json": {
        schema: {
          allOf: [{ $ref: `#/components/schemas/${ENVELOPE}` }],
          properties: { data: schemas.ref(method.output, "out") },
        },
      },
    },
  };
}

/** The codes of one HTTP status answer with one response, keyed by status in ascending order. */
function byStatus(codes: number[]): [number, number[]][] {
  const groups = new Map<number, number[]>();
  for (const code of new Set(codes)) {
    const status = ERROR_TABLE.get(code)!.httpStatus;
    groups.set(status, [...(groups.get(status) ?? []), code].sort((a, b) => a - b));
  }
  return [...groups].sort(([a], [b]) => a - b);
}

function errorResponse(codes: number[]): Json {
  const entries = codes.map((code) => ERROR_TABLE.get(code)!);
  return {
    description: entries.map((e) => `\`${e.code}\` ${e.summary}`).join(" "),
    headers: { "x-request-id": REQUEST_ID_HEADER, ...(codes.some((c) => RETRY_AFTER.has(c)) ? { "Retry-After": RETRY_AFTER_HEADER } : {}) },
    content: {
      "application/json": {
        schema: { allOf: [{ $ref: `#/components/schemas/${ERROR_ENVELOPE}` }], properties: { code: { enum: codes } } },
        examples: Object.fromEntries(entries.map((e) => [String(e.code), {
          summary: e.name,
          value: { code: e.code, message: e.summary, request_id: "3f2b8c1e-7a4d-4e29-9c5b-0d6e8f1a2b3c", data: null },
        }])),
      },
    },
  };
}

/**
 * The envelope of success and of error, from the Envelope message (errors.proto) that documents it:
 * its field names and comments; `data` is each operation's response message, or null on error.
 */
function envelopeSchemas(comments: ProtoComments): Record<string, JsonSchema> {
  const field = (name: string) => EnvelopeSchema.fields.find((f) => f.name === name)!;
  const described = (name: string, schema: JsonSchema) => withDescription(schema, comments.of(field(name)));
  const names = EnvelopeSchema.fields.map((f) => f.name);
  const errorCodes = ErrorCodeSchema.values.map((v) => v.number).filter((code) => code !== ErrorCode.SUCCESS && code !== ErrorCode.CANCELED);
  return {
    [ENVELOPE]: withDescription({
      type: "object",
      required: names,
      additionalProperties: false,
      properties: {
        code: described("code", { const: 0 }),
        message: described("message", { const: "success" }),
        request_id: described("request_id", { type: "string" }),
        data: described("data", {}),
      },
    }, comments.of(EnvelopeSchema)),
    [ERROR_ENVELOPE]: {
      type: "object",
      required: names,
      additionalProperties: false,
      properties: {
        code: described("code", { type: "integer", enum: errorCodes }),
        message: { type: "string", description: "What went wrong, naming the field and the limit." },
        request_id: described("request_id", { type: "string" }),
        data: { type: "null" },
      },
    },
  };
}

/**
 * A create (POST with a body) whose answer holds the path variable of a route under its path links to
 * that route: GET /things/{id} takes its `id` from the `data.id` of POST /things.
 */
function addLinks(routes: readonly RestRoute[], paths: Record<string, Record<string, Json>>): void {
  for (const source of routes) {
    if (source.httpMethod !== "POST" || source.body !== "*" || source.method.methodKind !== "unary") continue;
    const links: Json = {};
    for (const target of routes) {
      const next = target.segments[source.segments.length];
      const sameStart = source.segments.every((s, i) => "literal" in s && "literal" in target.segments[i]! && target.segments[i]!.literal === s.literal);
      if (!sameStart || !next || !("field" in next)) continue;
      const variable = next.field.name;
      if (!source.method.output.fields.some((f) => f.name === variable)) continue;
      links[target.method.name] = {
        operationId: target.method.name,
        parameters: { [variable]: `$response.body#/data/${variable}` },
        description: `The answer's \`data.${variable}\` as the \`${variable}\` of ${target.httpMethod} ${target.pattern}.`,
      };
    }
    if (Object.keys(links).length > 0) (paths[source.pattern]!.post!.responses as Record<string, Json>)[200]!.links = links;
  }
}

const withDescription = (schema: Json, description: string): Json => (description ? { ...schema, description } : schema);
const firstSentence = (text: string) => /^.*?[.!?](?=\s|$)/s.exec(text)?.[0] ?? text;
const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
