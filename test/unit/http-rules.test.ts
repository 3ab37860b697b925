import type { DescService } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { DepartmentService } from "../../gen/enterprise_admin/v1/department_pb.js";
import { UsageService } from "../../gen/enterprise_admin/v1/usage_pb.js";
import { RestRouter } from "../../src/rest/http-rules.js";
import { serviceWithRule } from "../helpers/synthetic-service.js";

describe("REST routes from google.api.http rules", () => {
  it("builds the department routes with path variables and bodies", () => {
    const router = new RestRouter([DepartmentService]);
    expect(router.list().map((r) => `${r.httpMethod} ${r.pattern}`).sort()).toEqual([
      "GET /openapi/v1/departments/search",
      "GET /openapi/v1/departments/{department_id}/children",
      "POST /openapi/v1/departments/batch-get",
    ]);
    const match = router.match("GET", "/openapi/v1/departments/a%2Fb/children");
    // As sent: the facade decodes it (a%2Fb is a/b), refusing a bad escape with 4001 naming the field.
    expect(match.kind === "route" && match.pathValues.map(([f, v]) => [f.name, v])).toEqual([["department_id", "a%2Fb"]]);
    expect(router.match("GET", "/openapi/v1/departments/%ff/children").kind).toBe("route");
    expect(router.match("DELETE", "/openapi/v1/departments/batch-get")).toEqual({ kind: "wrong-method", allow: ["POST"] });
    expect(router.match("GET", "/openapi/v1/nothing")).toEqual({ kind: "none" });
  });

  it("a literal segment wins over a variable in the same place", () => {
    const literal = serviceWithRule({ pattern: { case: "get", value: "/x/things/latest" } }, "LatestService");
    const variable = serviceWithRule({ pattern: { case: "get", value: "/x/things/{thing_id}" } });
    const router = new RestRouter([variable, literal] as DescService[]);
    const match = router.match("GET", "/x/things/latest");
    expect(match.kind === "route" && match.route.pattern).toBe("/x/things/latest");
  });

  it("refuses to start on a rule it cannot honour", () => {
    expect(() => new RestRouter([serviceWithRule({ pattern: { case: "get", value: "/x/{missing}" } })]))
      .toThrow("bad google.api.http rule on t.v1.ThingService.GetThing: path variable {missing} is not a field of t.v1.GetThingRequest");
    expect(() => new RestRouter([serviceWithRule({ pattern: { case: "get", value: "/x" }, body: "*" })]))
      .toThrow("get cannot take a body");
    expect(() => new RestRouter([serviceWithRule({ pattern: { case: "post", value: "/x" }, body: "thing_id" })]))
      .toThrow('body "thing_id" is not supported');
    expect(() => new RestRouter([serviceWithRule({ pattern: { case: "get", value: "/x/{thing_id=**}" } })]))
      .toThrow("is not supported");
  });

  it("routes a server-streaming method whose response carries records, and refuses one that does not", () => {
    const match = new RestRouter([UsageService]).match("GET", "/openapi/v1/statistics/usage-export");
    expect(match.kind === "route" && [match.route.method.name, match.route.method.methodKind]).toEqual(["ExportUsage", "server_streaming"]);
    expect(() => new RestRouter([serviceWithRule({ pattern: { case: "get", value: "/x" } }, undefined, true)]))
      .toThrow("bad google.api.http rule on t.v1.ThingService.GetThing: t.v1.Thing: a streamed response must have exactly one field, a repeated message (the records)");
  });
});
