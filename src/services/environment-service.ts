// EnvironmentConfigService: proto <-> the environment-config use cases; the supported-versions
// catalogue and the startup plan. No SQL, no crypto here.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  EnvironmentConfigService,
  type EnvironmentConfigSchema,
  type NetworkPolicySchema,
  type PreinstalledPackages,
  type PreinstalledPackagesSchema,
  type StartupPlanSchema,
  type StartupStepSchema,
  type RuntimeConfig as RuntimeConfigMessage,
  UpdateEnvironmentConfigRequestSchema,
} from "../../gen/enterprise_admin/v1/environment_pb.js";
import { invalidParameter } from "../domain/errors.js";
import { checkNetworkPolicy, NETWORK_POLICY, type RuntimeConfig } from "../domain/environment-rules.js";
import { RUNTIME_CATALOGUE, latestVersion, resolvePackages, type PackageField, type Packages } from "../domain/runtime-versions.js";
import { principalOf } from "../interceptors/auth.js";
import { fromRow, type EnvironmentChanges, type EnvironmentConfigs, type EnvironmentView } from "../operations/environment-configs.js";

/** The fields an update_mask may name: the request's own, but the id and the mask (REST infers the mask from every field of its body). */
const MASKABLE = UpdateEnvironmentConfigRequestSchema.fields.map((f) => f.name).filter((name) => name !== "id" && name !== "update_mask");

export function environmentService(configs: EnvironmentConfigs): ServiceImpl<typeof EnvironmentConfigService> {
  return {
    async createEnvironmentConfig(request, context) {
      if (request.networkPolicy) checkNetworkPolicy(request.networkPolicy);
      const view = await configs.create(principalOf(context).enterpriseId, {
        name: request.name,
        description: request.description,
        preinstalledPackages: packagesFrom(request.preinstalledPackages),
        runtimeConfig: runtimeFrom(request.runtimeConfig),
        environmentVariables: request.environmentVariables,
        secrets: request.secrets,
      });
      return toMessage(view);
    },

    async getEnvironmentConfig(request, context) {
      return toMessage(await configs.get(principalOf(context).enterpriseId, request.id));
    },

    async listEnvironmentConfigs(request, context) {
      const page = await configs.list(principalOf(context).enterpriseId, request.pageSize, request.pageToken);
      return { items: page.items.map(toMessage), nextPageToken: page.nextPageToken };
    },

    async updateEnvironmentConfig(request, context) {
      if (request.networkPolicy) checkNetworkPolicy(request.networkPolicy);
      // REST fills update_mask from the body's keys; an RPC caller without a mask updates what it set.
      const paths = new Set(request.updateMask?.paths ?? []);
      for (const path of paths) {
        if (!MASKABLE.includes(path)) throw invalidParameter(`update_mask: ${JSON.stringify(path)} is not a field of the update (one of ${MASKABLE.join(", ")})`);
      }
      const given = (field: string, set: boolean) => (paths.size > 0 ? paths.has(field) : set);
      const changes: EnvironmentChanges = { etag: request.etag };
      if (given("name", request.name !== undefined)) changes.name = request.name ?? "";
      if (given("description", request.description !== undefined)) changes.description = request.description ?? "";
      if (given("preinstalled_packages", request.preinstalledPackages !== undefined)) changes.preinstalledPackages = packagesFrom(request.preinstalledPackages);
      if (given("runtime_config", request.runtimeConfig !== undefined)) changes.runtimeConfig = runtimeFrom(request.runtimeConfig);
      if (given("environment_variables", Object.keys(request.environmentVariables).length > 0)) changes.environmentVariables = request.environmentVariables;
      if (given("secrets", Object.keys(request.secrets).length > 0)) changes.secrets = request.secrets;
      if (given("remove_secret_keys", request.removeSecretKeys.length > 0)) changes.removeSecretKeys = request.removeSecretKeys;
      return toMessage(await configs.update(principalOf(context).enterpriseId, request.id, changes));
    },

    async deleteEnvironmentConfig(request, context) {
      await configs.delete(principalOf(context).enterpriseId, request.id, request.etag);
      return {};
    },

    async getSupportedVersions() {
      return {
        languages: RUNTIME_CATALOGUE.map((entry) => ({
          field: entry.field, language: entry.language, versions: [...entry.versions], latest: latestVersion(entry),
        })),
      };
    },

    async getStartupPlan(request, context): Promise<MessageInitShape<typeof StartupPlanSchema>> {
      const view = await configs.get(principalOf(context).enterpriseId, request.id);
      const config = fromRow(view.row);
      const runtime = config.runtimeConfig;
      const steps: MessageInitShape<typeof StartupStepSchema>[] = [];
      let stage = 1;
      if (runtime.install !== "") {
        steps.push({ stage: stage++, kind: "install", command: runtime.install, blocking: true, stopOnFailure: true });
      }
      if (runtime.start !== "") steps.push({ stage: stage++, kind: "start", command: runtime.start, background: true });
      for (const terminal of runtime.terminals) {
        steps.push({ stage, kind: "terminal", name: terminal.name, command: terminal.command, background: true });
      }
      return {
        environmentConfigId: view.row.id,
        packages: packagesTo(resolvePackages(config.preinstalledPackages)),
        steps,
        environmentVariableKeys: Object.keys(config.environmentVariables).sort(),
        secretKeys: view.secretKeys,
        networkPolicy: networkPolicy(),
      };
    },
  };
}

const PACKAGE_FIELDS: ReadonlyArray<[PackageField, keyof PreinstalledPackages]> = [
  ["python_version", "pythonVersion"], ["node_version", "nodeVersion"], ["go_version", "goVersion"], ["rust_version", "rustVersion"],
  ["java_version", "javaVersion"], ["ruby_version", "rubyVersion"], ["php_version", "phpVersion"], ["swift_version", "swiftVersion"],
];

function packagesFrom(message: PreinstalledPackages | undefined): Packages {
  const packages: Packages = {};
  for (const [field, local] of PACKAGE_FIELDS) {
    const version = message?.[local];
    if (typeof version === "string") packages[field] = version;
  }
  return packages;
}

function packagesTo(packages: Packages): MessageInitShape<typeof PreinstalledPackagesSchema> {
  return Object.fromEntries(PACKAGE_FIELDS.filter(([field]) => packages[field] !== undefined).map(([field, local]) => [local, packages[field]]));
}

function runtimeFrom(message: RuntimeConfigMessage | undefined): RuntimeConfig {
  return {
    install: message?.install ?? "",
    start: message?.start ?? "",
    terminals: (message?.terminals ?? []).map((t) => ({ name: t.name, command: t.command, description: t.description })),
  };
}

const networkPolicy = (): MessageInitShape<typeof NetworkPolicySchema> => ({
  mode: NETWORK_POLICY.mode, allowlistPolicy: NETWORK_POLICY.allowlist_policy, commonDependencies: [...NETWORK_POLICY.common_dependencies],
});

function toMessage({ row, secretKeys }: EnvironmentView): MessageInitShape<typeof EnvironmentConfigSchema> {
  const config = fromRow(row);
  return {
    id: row.id,
    name: config.name,
    description: config.description,
    preinstalledPackages: packagesTo(config.preinstalledPackages),
    resolvedPackages: packagesTo(resolvePackages(config.preinstalledPackages)),
    runtimeConfig: config.runtimeConfig,
    environmentVariables: config.environmentVariables,
    secretKeys,
    networkPolicy: networkPolicy(),
    createTime: timestampFromMs(Number(row.created_at_ms)),
    updateTime: timestampFromMs(Number(row.updated_at_ms)),
    etag: row.etag,
  };
}

