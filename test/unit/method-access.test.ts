import { create, setExtension, type DescService } from "@bufbuild/protobuf";
import { createServiceImplSpec } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { MethodAccessSchema, access } from "../../gen/enterprise_admin/v1/options_pb.js";
import { Authenticator } from "../../src/interceptors/auth.js";
import { CallChain } from "../../src/interceptors/call-chain.js";
import { DEFAULT_RATE_LIMITS, RateLimits } from "../../src/domain/rate-limits.js";
import type { AuthRepository } from "../../src/storage/auth-repository.js";
import { serviceWithRule, syntheticService } from "../helpers/synthetic-service.js";

// The token lookup is never reached: these checks happen while the server is being put together.
const chainOf = (service: DescService) => new CallChain([{ service, spec: createServiceImplSpec(service, {}) }],
  new Authenticator({} as AuthRepository), new RateLimits(DEFAULT_RATE_LIMITS));

describe("every business method declares who may call it", () => {
  it("a method without an (access) option stops the server from starting (the one call chain of RPC and REST)", () => {
    const open = serviceWithRule({ pattern: { case: "get", value: "/x/things/{thing_id}" } });
    expect(() => chainOf(open)).toThrow("t.v1.ThingService.GetThing declares no (enterprise_admin.v1.access) option");
  });

  it("a method with a permission, open to any valid token, or marked public is accepted", () => {
    const guarded = syntheticService((o) => setExtension(o, access, create(MethodAccessSchema, { permission: "departments:read" })));
    const anyToken = syntheticService((o) => setExtension(o, access, create(MethodAccessSchema, { anyToken: true })), "AnyTokenService");
    const open = syntheticService((o) => setExtension(o, access, create(MethodAccessSchema, { public: true })), "PublicService");
    for (const service of [guarded, anyToken, open]) expect(chainOf(service).interceptors).toHaveLength(3);
  });
});
