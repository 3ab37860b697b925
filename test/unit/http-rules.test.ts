import { create, createFileRegistry, setExtension, type DescService } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, MethodOptionsSchema, file_google_protobuf_descriptor } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { DepartmentService } from "../../gen/enterprise_admin/v1/department_pb.js";
import { http } from "../../gen/google/api/annotations_pb.js";
import { HttpRuleSchema } from "../../gen/google/api/http_pb.js";
import { RestRouter } from "../../src/rest/http-rules.js";

/** A one-method service whose GetThing has the given HTTP rule. */
function serviceWithRule(rule: Parameters<typeof create<typeof HttpRuleSchema>>[1]): DescService {
  const options = create(MethodOptionsSchema);
  setExtension(options, http, create(HttpRuleSchema, rule));
  const file = create(FileDescriptorProtoSchema, {
    name: "t/v1/t.proto", package: "t.v1", syntax: "proto3", dependency: ["google/protobuf/descriptor.proto"],
    messageType: [{ name: "GetThingRequest", field: [{ name: "thing_id", number: 1, type: 9, label: 1, jsonName: "thingId" }] }, { name: "Thing" }],
    service: [{ name: "ThingService", method: [{ name: "GetThing", inputType: ".t.v1.GetThingRequest", outputType: ".t.v1.Thing", options }] }],
  });
  const registry = createFileRegistry(file, (name) => (name === "google/protobuf/descriptor.proto" ? file_google_protobuf_descriptor : undefined));
  return registry.getService("t.v1.ThingService")!;
}

describe("REST routes from google.api.http rules", () => {
  it("builds the department routes with path variables and bodies", () => {
    const router = new RestRouter([DepartmentService]);
    expect(router.list().map((r) => `${r.httpMethod} ${r.pattern}`).sort()).toEqual([
      "GET /openapi/v1/departments/search",
      "GET /openapi/v1/departments/{department_id}/children",
      "POST /openapi/v1/departments/batch-get",
    ]);
    const match = router.match("GET", "/openapi/v1/departments/a%2Fb/children");
    expect(match.kind === "route" && match.pathValues.map(([f, v]) => [f.name, v])).toEqual([["department_id", "a/b"]]);
    expect(router.match("DELETE", "/openapi/v1/departments/batch-get")).toEqual({ kind: "wrong-method", allow: ["POST"] });
    expect(router.match("GET", "/openapi/v1/nothing")).toEqual({ kind: "none" });
  });

  it("a literal segment wins over a variable in the same place", () => {
    const literal = serviceWithRule({ pattern: { case: "get", value: "/x/things/latest" } });
    const variable = serviceWithRule({ pattern: { case: "get", value: "/x/things/{thing_id}" } });
    const router = new RestRouter([variable, { ...literal, typeName: "t.v1.Other" } as DescService]);
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
});
