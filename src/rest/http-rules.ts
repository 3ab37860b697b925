// The REST route table, built at start-up from the google.api.http rules of the served methods and
// checked against their request messages then: a rule this facade cannot honour fails the start.
// Unary and server-streaming methods can have a rule; a stream's response must carry records
// (record-formats.ts).
import { getOption, ScalarType, type DescField, type DescMethod, type DescService } from "@bufbuild/protobuf";
import { http as httpOption } from "../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../gen/google/api/http_pb.js";
import type { ServedMethod } from "../interceptors/call-chain.js";
import { recordsField } from "./record-formats.js";

type Segment = { literal: string } | { field: DescField };

export interface RestRoute {
  httpMethod: string;
  pattern: string;
  method: ServedMethod;
  segments: Segment[];
  /** "*": the whole body is the request message; "": no body, fields come from the query. */
  body: "*" | "";
}

export type RouteMatch =
  /** `pathValues`: each path variable's segment as sent, percent-encoded (see decodeComponent). */
  | { kind: "route"; route: RestRoute; pathValues: [DescField, string][] }
  | { kind: "wrong-method"; allow: string[] }
  | { kind: "none" };

const VERBS = ["get", "put", "post", "delete", "patch"] as const;

export class RestRouter {
  private readonly routes: RestRoute[];

  constructor(services: readonly DescService[]) {
    const routes: RestRoute[] = [];
    for (const service of services) {
      for (const method of service.methods) {
        const rule = getOption(method, httpOption);
        if (!rule.pattern.case) continue;
        if (method.methodKind !== "unary" && method.methodKind !== "server_streaming") {
          fail(method, "only unary and server-streaming methods can have an HTTP rule");
        }
        if (method.methodKind === "server_streaming") {
          try {
            recordsField(method.output);
          } catch (error) {
            fail(method, (error as Error).message);
          }
        }
        for (const r of [rule, ...rule.additionalBindings]) routes.push(toRoute(method as ServedMethod, r));
      }
    }
    const seen = new Set<string>();
    for (const route of routes) {
      const key = `${route.httpMethod} ${route.segments.map((s) => ("literal" in s ? s.literal : "{}")).join("/")}`;
      if (seen.has(key)) fail(route.method, `route ${route.httpMethod} ${route.pattern} is declared twice`);
      seen.add(key);
    }
    // Literal segments win over variables: GET .../supported_versions beats GET .../{id}.
    this.routes = routes.sort((a, b) => specificity(b) - specificity(a));
  }

  list(): readonly RestRoute[] {
    return this.routes;
  }

  match(httpMethod: string, path: string): RouteMatch {
    const parts = path.split("/").slice(1);
    const allow: string[] = [];
    for (const route of this.routes) {
      const pathValues = matchSegments(route.segments, parts);
      if (!pathValues) continue;
      // HEAD is GET without the body (RFC 9110): Node's response leaves the body out by itself.
      if (route.httpMethod === httpMethod || (httpMethod === "HEAD" && route.httpMethod === "GET")) return { kind: "route", route, pathValues };
      for (const method of route.httpMethod === "GET" ? ["GET", "HEAD"] : [route.httpMethod]) if (!allow.includes(method)) allow.push(method);
    }
    return allow.length > 0 ? { kind: "wrong-method", allow } : { kind: "none" };
  }
}

function matchSegments(segments: Segment[], parts: string[]): [DescField, string][] | undefined {
  if (segments.length !== parts.length) return undefined;
  const values: [DescField, string][] = [];
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    const part = parts[i]!;
    if ("literal" in segment) {
      if (segment.literal !== part) return undefined;
    } else {
      if (part === "") return undefined;
      values.push([segment.field, part]);
    }
  }
  return values;
}

/** A percent-encoded URL component as text; undefined when an escape is cut short or its bytes are not UTF-8 (`%ff`). */
export function decodeComponent(part: string): string | undefined {
  try {
    return decodeURIComponent(part);
  } catch {
    return undefined;
  }
}

const specificity = (route: RestRoute) =>
  route.segments.reduce((score, s, i) => score + ("literal" in s ? 2 ** (16 - i) : 0), 0);

function toRoute(method: ServedMethod, rule: HttpRule): RestRoute {
  const verb = rule.pattern.case;
  if (!VERBS.includes(verb as (typeof VERBS)[number])) fail(method, `HTTP pattern "${verb}" is not supported`);
  const pattern = rule.pattern.value as string;
  if (!pattern.startsWith("/")) fail(method, `path "${pattern}" must start with /`);
  const segments: Segment[] = pattern.slice(1).split("/").map((part) => {
    const variable = /^\{([a-z_][a-z0-9_]*)\}$/.exec(part);
    if (!variable) {
      if (/[{}*:]/.test(part)) fail(method, `path segment "${part}" is not supported (use a literal or {field})`);
      return { literal: part };
    }
    const field = method.input.fields.find((f) => f.name === variable[1]);
    if (!field) fail(method, `path variable {${variable[1]}} is not a field of ${method.input.typeName}`);
    if (field.fieldKind !== "scalar" || field.scalar === ScalarType.BYTES) {
      fail(method, `path variable {${variable[1]}} must be a scalar field`);
    }
    return { field };
  });
  if (rule.body !== "*" && rule.body !== "") fail(method, `body "${rule.body}" is not supported (use "*" or none)`);
  if (rule.body === "*" && (verb === "get" || verb === "delete")) fail(method, `${verb} cannot take a body`);
  if (rule.responseBody !== "") fail(method, "response_body is not supported");
  return { httpMethod: verb!.toUpperCase(), pattern, method, segments, body: rule.body as "*" | "" };
}

function fail(method: DescMethod | { parent: DescService; name: string }, reason: string): never {
  throw new Error(`bad google.api.http rule on ${method.parent.typeName}.${method.name}: ${reason}`);
}
