// A one-method service (t.v1.ThingService.GetThing) built from a descriptor in memory, with the
// method options a test wants: for checking what the server does with rules it cannot honour.
import { create, createFileRegistry, setExtension, type DescService } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, MethodOptionsSchema, file_google_protobuf_descriptor, type MethodOptions } from "@bufbuild/protobuf/wkt";
import { http } from "../../gen/google/api/annotations_pb.js";
import { HttpRuleSchema } from "../../gen/google/api/http_pb.js";

export function syntheticService(configure: (options: MethodOptions) => void, serviceName = "ThingService", serverStreaming = false): DescService {
  const options = create(MethodOptionsSchema);
  configure(options);
  const file = create(FileDescriptorProtoSchema, {
    name: `t/v1/${serviceName}.proto`, package: "t.v1", syntax: "proto3", dependency: ["google/protobuf/descriptor.proto"],
    messageType: [{ name: "GetThingRequest", field: [{ name: "thing_id", number: 1, type: 9, label: 1, jsonName: "thingId" }] }, { name: "Thing" }],
    service: [{ name: serviceName, method: [{ name: "GetThing", inputType: ".t.v1.GetThingRequest", outputType: ".t.v1.Thing", options, serverStreaming }] }],
  });
  const registry = createFileRegistry(file, (name) => (name === "google/protobuf/descriptor.proto" ? file_google_protobuf_descriptor : undefined));
  return registry.getService(`t.v1.${serviceName}`)!;
}

/** A service whose GetThing (server-streaming if asked) has the given google.api.http rule. */
export function serviceWithRule(rule: Parameters<typeof create<typeof HttpRuleSchema>>[1], serviceName?: string, serverStreaming?: boolean): DescService {
  return syntheticService((options) => setExtension(options, http, create(HttpRuleSchema, rule)), serviceName, serverStreaming);
}
