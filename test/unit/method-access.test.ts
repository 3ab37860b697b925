import { create, setExtension } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { MethodAccessSchema, access } from "../../gen/enterprise_admin/v1/options_pb.js";
import { Authenticator } from "../../src/interceptors/auth.js";
import { CallPipeline, bindService } from "../../src/interceptors/call-pipeline.js";
import { DEFAULT_RATE_LIMITS, RateLimits } from "../../src/domain/rate-limits.js";
import { RestFacade } from "../../src/rest/rest-facade.js";
import type { AuthRepository } from "../../src/storage/auth-repository.js";
import { serviceWithRule, syntheticService } from "../helpers/synthetic-service.js";

// The token lookup is never reached: these checks happen while the server is being put together.
const pipeline = new CallPipeline(new Authenticator({} as AuthRepository), new RateLimits(DEFAULT_RATE_LIMITS));
const handlers = { getThing: async () => ({}) };

describe("every business method declares who may call it", () => {
  it("a method without an (access) option stops the server from starting, on RPC and REST alike", () => {
    const open = serviceWithRule({ pattern: { case: "get", value: "/x/things/{thing_id}" } });
    expect(() => bindService(open, handlers as never, pipeline)).toThrow("t.v1.ThingService.GetThing declares no (enterprise_admin.v1.access) option");
    expect(() => new RestFacade([{ service: open, handlers }], pipeline)).toThrow("declares no (enterprise_admin.v1.access) option");
  });

  it("a method with a permission, open to any valid token, or marked public is accepted", () => {
    const guarded = syntheticService((o) => setExtension(o, access, create(MethodAccessSchema, { permission: "departments:read" })));
    const anyToken = syntheticService((o) => setExtension(o, access, create(MethodAccessSchema, { anyToken: true })), "AnyTokenService");
    const open = syntheticService((o) => setExtension(o, access, create(MethodAccessSchema, { public: true })), "PublicService");
    expect(Object.keys(bindService(guarded, handlers as never, pipeline))).toEqual(["getThing"]);
    expect(Object.keys(bindService(anyToken, handlers as never, pipeline))).toEqual(["getThing"]);
    expect(Object.keys(bindService(open, handlers as never, pipeline))).toEqual(["getThing"]);
  });
});
