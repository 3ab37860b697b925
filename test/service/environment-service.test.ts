// EnvironmentConfigService in memory (router transport, real chain and database): CRUD, etags,
// sealed secrets, tenancy and the version rules.
import { Code, type Client } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toJsonString } from "@bufbuild/protobuf";
import { EnvironmentConfigSchema, EnvironmentConfigService } from "../../gen/enterprise_admin/v1/environment_pb.js";
import { ErrorCode } from "../../src/domain/errors.js";
import { dialects } from "../helpers/databases.js";
import { failureOf, startInMemoryService, type InMemoryService } from "../helpers/in-memory-service.js";

describe.each(dialects)("EnvironmentConfigService in memory (%s)", (dialect) => {
  let service: InMemoryService;
  let environments: Client<typeof EnvironmentConfigService>;

  beforeAll(async () => {
    service = await startInMemoryService(dialect);
    environments = service.client(EnvironmentConfigService, await service.token(["environments:read", "environments:write"]));
  });
  afterAll(() => service.close());

  it("create returns the record with resolved packages and secret key names only; get returns the same", async () => {
    const created = await environments.createEnvironmentConfig({
      name: "build", preinstalledPackages: { pythonVersion: "3.12" }, environmentVariables: { MODE: "ci" }, secrets: { TOKEN: "s3cret-value" },
    });
    expect(created.preinstalledPackages).toMatchObject({ pythonVersion: "3.12" });
    expect(created.preinstalledPackages?.nodeVersion).toBeUndefined();
    expect(created.resolvedPackages).toMatchObject({ pythonVersion: "3.12", nodeVersion: "24" });
    expect(created.environmentVariables).toEqual({ MODE: "ci" });
    expect(created.secretKeys).toEqual(["TOKEN"]);
    expect(toJsonString(EnvironmentConfigSchema, created)).not.toContain("s3cret-value");
    const read = await environments.getEnvironmentConfig({ id: created.id });
    expect(read.etag).toBe(created.etag);
    expect(read.secretKeys).toEqual(["TOKEN"]);
  });

  it("update with the current etag replaces what it names and changes the etag; the old etag is then 4092 (aborted)", async () => {
    const created = await environments.createEnvironmentConfig({ name: "etag-rules", description: "first" });
    const updated = await environments.updateEnvironmentConfig({ id: created.id, etag: created.etag, description: "second", updateMask: { paths: ["description"] } });
    expect(updated.description).toBe("second");
    expect(updated.name).toBe("etag-rules");
    expect(updated.etag).not.toBe(created.etag);
    expect(await failureOf(environments.updateEnvironmentConfig({ id: created.id, etag: created.etag, description: "third", updateMask: { paths: ["description"] } }))).toEqual({
      code: Code.Aborted, errorCode: ErrorCode.ETAG_MISMATCH, message: "etag: the environment config changed since it was read; get it again and retry",
    });
  });

  it("a name taken in the enterprise is 4091 (already_exists); another enterprise may use it", async () => {
    await environments.createEnvironmentConfig({ name: "shared-name" });
    expect(await failureOf(environments.createEnvironmentConfig({ name: "shared-name" }))).toEqual({
      code: Code.AlreadyExists, errorCode: ErrorCode.NAME_TAKEN,
      message: 'name: "shared-name" is already used by another environment config of this enterprise',
    });
    const globex = service.client(EnvironmentConfigService, await service.token(["environments:write"], "globex"));
    expect((await globex.createEnvironmentConfig({ name: "shared-name" })).name).toBe("shared-name");
  });

  it("another enterprise's config is not found (4041), and is gone after delete", async () => {
    const created = await environments.createEnvironmentConfig({ name: "private" });
    const globex = service.client(EnvironmentConfigService, await service.token(["environments:read"], "globex"));
    expect(await failureOf(globex.getEnvironmentConfig({ id: created.id }))).toMatchObject({ code: Code.NotFound, errorCode: ErrorCode.ENVIRONMENT_CONFIG_NOT_FOUND });
    await environments.deleteEnvironmentConfig({ id: created.id });
    expect(await failureOf(environments.getEnvironmentConfig({ id: created.id }))).toEqual({
      code: Code.NotFound, errorCode: ErrorCode.ENVIRONMENT_CONFIG_NOT_FOUND, message: `environment config "${created.id}" not found`,
    });
  });

  it("a version outside the supported list is 4001 listing the supported ones", async () => {
    expect(await failureOf(environments.createEnvironmentConfig({ name: "old-node", preinstalledPackages: { nodeVersion: "16" } }))).toEqual({
      code: Code.InvalidArgument, errorCode: ErrorCode.INVALID_PARAMETER,
      message: 'preinstalled_packages.node_version: "16" is not supported; supported Node.js versions: 18, 20, 22, 24',
    });
  });

  it("writing needs environments:write (30017 with environments:read alone)", async () => {
    const reader = service.client(EnvironmentConfigService, await service.token(["environments:read"]));
    expect(await failureOf(reader.createEnvironmentConfig({ name: "nope" }))).toEqual({
      code: Code.PermissionDenied, errorCode: ErrorCode.PERMISSION_DENIED, message: "permission denied: this operation needs environments:write",
    });
  });
});
