// Environment configurations as use cases: check the whole configuration as it would be stored,
// seal secrets with the environment's data key (envelope encryption), keep names unique, and detect
// concurrent updates by revision. Secret values go in and never come out through here.
import { createHash, randomBytes } from "node:crypto";
import { checkEnvironmentDraft, type EnvironmentDraft, type RuntimeConfig } from "../domain/environment-rules.js";
import { AppError, ErrorCode, invalidParameter } from "../domain/errors.js";
import { textProblem } from "../domain/text-rules.js";
import { decodePageToken, effectivePageSize, encodePageToken } from "../domain/page-token.js";
import type { Packages } from "../domain/runtime-versions.js";
import { newDataKey, openSecret, sealSecret } from "../domain/secret-crypto.js";
import { MasterKeyNotHeldError, type KeyProvider } from "../keys/key-provider.js";
import { isNameConflict, type EnvironmentConfigRepository, type EnvironmentConfigRow } from "../storage/environment-config-repository.js";

export interface EnvironmentView {
  row: EnvironmentConfigRow;
  secretKeys: string[];
}

/** What a create or update may carry; absent fields are left as they are on update. */
export interface EnvironmentChanges {
  name?: string;
  description?: string;
  preinstalledPackages?: Packages;
  runtimeConfig?: RuntimeConfig;
  environmentVariables?: Record<string, string>;
  secrets?: Record<string, string>;
  removeSecretKeys?: string[];
  etag?: string;
}

const notFound = (id: string) => new AppError(ErrorCode.ENVIRONMENT_CONFIG_NOT_FOUND, `environment config "${id}" not found`);
const nameTaken = (name: string) => new AppError(ErrorCode.NAME_TAKEN, `name: ${JSON.stringify(name)} is already used by another environment config of this enterprise`);
/** When this server lacks a master key: it reads the key file again on the next call that needs the key. */
const MASTER_KEY_RETRY_AFTER_SECONDS = 10;
const staleEtag = () => new AppError(ErrorCode.ETAG_MISMATCH, "etag: the environment config changed since it was read; get it again and retry");

export class EnvironmentConfigs {
  constructor(private readonly repository: EnvironmentConfigRepository, private readonly keys: KeyProvider) {}

  async create(enterpriseId: string, changes: EnvironmentChanges): Promise<EnvironmentView> {
    const draft: EnvironmentDraft = {
      name: changes.name ?? "",
      description: changes.description ?? "",
      preinstalledPackages: changes.preinstalledPackages ?? {},
      runtimeConfig: changes.runtimeConfig ?? { install: "", start: "", terminals: [] },
      environmentVariables: changes.environmentVariables ?? {},
      secrets: changes.secrets ?? {},
    };
    checkEnvironmentDraft(draft);
    const id = `env_${randomBytes(12).toString("base64url")}`;
    const now = Date.now();
    const row = toRow(enterpriseId, id, draft, now, now, 1);
    const dataKey = newDataKey();
    return this.nameGuarded(draft.name, () => this.repository.transaction(async (tx) => {
      // Wrapped under the key the ring names now, and stored before a rotation can retire that key.
      const masterKeyId = await tx.lockCurrentMasterKey(this.keys.initialKeyId, "share");
      if (await tx.nameTaken(enterpriseId, draft.name)) throw nameTaken(draft.name);
      const wrapped = await this.heldKey(() => this.keys.wrap(dataKey, { enterpriseId, environmentId: id }, masterKeyId));
      await tx.insert(row, { master_key_id: wrapped.masterKeyId, wrapped_key: wrapped.wrapped });
      await tx.putSecrets(id, seal(dataKey, enterpriseId, id, draft.secrets));
      return { row, secretKeys: Object.keys(draft.secrets).sort() };
    }));
  }

  async get(enterpriseId: string, id: string): Promise<EnvironmentView> {
    const row = await this.repository.find(enterpriseId, id);
    if (!row) throw notFound(id);
    return { row, secretKeys: (await this.repository.secretKeys([id])).get(id)! };
  }

  async list(enterpriseId: string, requestedPageSize: number, pageToken: string) {
    const pageSize = effectivePageSize(requestedPageSize);
    const afterText = decodePageToken("environment-configs", pageToken);
    const after = afterText === undefined ? undefined : parseCursor(afterText);
    const rows = await this.repository.list(enterpriseId, after, pageSize + 1);
    const page = rows.slice(0, pageSize);
    const secretKeys = await this.repository.secretKeys(page.map((r) => r.id));
    const last = page[page.length - 1];
    return {
      items: page.map((row) => ({ row, secretKeys: secretKeys.get(row.id)! })),
      nextPageToken: rows.length > pageSize && last ? encodePageToken("environment-configs", JSON.stringify([last.name, last.id])) : "",
    };
  }

  async update(enterpriseId: string, id: string, changes: EnvironmentChanges): Promise<EnvironmentView> {
    return this.nameGuarded(changes.name ?? "", () => this.repository.transaction(async (tx) => {
      const stored = await tx.find(enterpriseId, id, "update");
      if (!stored) throw notFound(id);
      if (changes.etag !== undefined && changes.etag !== "" && changes.etag !== stored.etag) throw staleEtag();

      const storedKeys = (await tx.secretKeys([id])).get(id)!;
      const removals = [...new Set(changes.removeSecretKeys ?? [])];
      for (const key of removals) {
        if (!storedKeys.includes(key)) throw invalidParameter(`remove_secret_keys: ${JSON.stringify(key)} is not a secret of this environment config`);
        if (changes.secrets && Object.hasOwn(changes.secrets, key)) throw invalidParameter(`remove_secret_keys: ${JSON.stringify(key)} is also set in secrets`);
      }
      // Kept secrets take part in the counts and key checks; their values were checked when set.
      const keptSecrets = Object.fromEntries(storedKeys.filter((k) => !removals.includes(k)).map((k) => [k, ""]));
      const current = fromRow(stored);
      const draft: EnvironmentDraft = {
        name: changes.name ?? current.name,
        description: changes.description ?? current.description,
        preinstalledPackages: changes.preinstalledPackages ?? current.preinstalledPackages,
        runtimeConfig: changes.runtimeConfig ?? current.runtimeConfig,
        environmentVariables: changes.environmentVariables ?? current.environmentVariables,
        secrets: { ...keptSecrets, ...(changes.secrets ?? {}) },
      };
      checkEnvironmentDraft(draft);
      if (draft.name !== stored.name && (await tx.nameTaken(enterpriseId, draft.name, id))) throw nameTaken(draft.name);

      const row = toRow(enterpriseId, id, draft, stored.created_at_ms, Math.max(Date.now(), stored.updated_at_ms + 1), stored.revision + 1);
      if (!(await tx.update(row, stored.revision))) throw staleEtag();
      const newSecrets = changes.secrets ?? {};
      if (Object.keys(newSecrets).length > 0) {
        const dataKey = await this.heldKey(() => this.dataKey(tx, enterpriseId, id));
        await tx.putSecrets(id, seal(dataKey, enterpriseId, id, newSecrets));
      }
      await tx.deleteSecrets(id, removals);
      return { row, secretKeys: Object.keys(draft.secrets).sort() };
    }));
  }

  /** Two writers racing for one name: the loser's unique violation is the same 409 as the check's. */
  private async nameGuarded<T>(name: string, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      if (isNameConflict(error)) throw nameTaken(name);
      throw error;
    }
  }

  async delete(enterpriseId: string, id: string, etag = ""): Promise<void> {
    await this.repository.transaction(async (tx) => {
      const stored = await tx.find(enterpriseId, id);
      if (!stored) throw notFound(id);
      if (etag !== "" && etag !== stored.etag) throw staleEtag();
      await tx.delete(enterpriseId, id);
    });
  }

  /** The clear secrets of one configuration, for the sandbox runner's side of the house and tests. */
  async revealSecrets(enterpriseId: string, id: string): Promise<Record<string, string>> {
    if (!(await this.repository.find(enterpriseId, id))) throw notFound(id);
    const dataKey = await this.dataKey(this.repository, enterpriseId, id);
    const sealed = await this.repository.sealedSecrets(id);
    return Object.fromEntries(sealed.map((s) => [s.key, openSecret(dataKey, { enterpriseId, environmentId: id, key: s.key }, s.sealed_value)]));
  }

  /**
   * The environment's data key, unwrapped. A rotation may re-wrap it and remove its old master key
   * between the read and the unwrap (a server that never held that key then cannot get it): the row
   * is read once more, and what it names now is used.
   */
  private async dataKey(repository: EnvironmentConfigRepository, enterpriseId: string, id: string): Promise<Buffer> {
    const unwrapStored = async () => {
      const stored = await repository.dataKey(id);
      if (!stored) throw new Error(`environment ${id} has no data key`);
      return this.keys.unwrap({ masterKeyId: stored.master_key_id, wrapped: stored.wrapped_key }, { enterpriseId, environmentId: id });
    };
    try {
      return await unwrapStored();
    } catch (error) {
      if (!(error instanceof MasterKeyNotHeldError)) throw error;
      return unwrapStored();
    }
  }

  /**
   * A master key this server does not hold (the instances were not all given the new key, or it was
   * removed from the key file by hand) is a state of the server, not the caller's fault: 503, retry.
   * The key's id and the reason go to the call's log line, not to the caller.
   */
  private async heldKey<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (error instanceof MasterKeyNotHeldError) {
        throw new AppError(ErrorCode.UNAVAILABLE, "secrets: the master key they need is not available to this server; retry later",
          { "Retry-After": String(MASTER_KEY_RETRY_AFTER_SECONDS) },
          { message: "secrets refused: master key not available to this server", fields: { master_key_id: error.masterKeyId, reason: error.message } });
      }
      throw error;
    }
  }
}

function seal(dataKey: Buffer, enterpriseId: string, environmentId: string, secrets: Record<string, string>) {
  return Object.entries(secrets).map(([key, value]) => ({ key, sealed_value: sealSecret(dataKey, { enterpriseId, environmentId, key }, value) }));
}

function toRow(enterpriseId: string, id: string, draft: EnvironmentDraft, createdAt: number, updatedAt: number, revision: number): EnvironmentConfigRow {
  return {
    id,
    enterprise_id: enterpriseId,
    name: draft.name,
    description: draft.description,
    preinstalled_packages: JSON.stringify(draft.preinstalledPackages),
    runtime_config: JSON.stringify(draft.runtimeConfig),
    environment_variables: JSON.stringify(draft.environmentVariables),
    created_at_ms: createdAt,
    updated_at_ms: updatedAt,
    revision,
    etag: createHash("sha256").update(`${id}:${revision}:${updatedAt}`).digest("base64url").slice(0, 22),
  };
}

export function fromRow(row: EnvironmentConfigRow) {
  return {
    name: row.name,
    description: row.description,
    preinstalledPackages: JSON.parse(row.preinstalled_packages) as Packages,
    runtimeConfig: JSON.parse(row.runtime_config) as RuntimeConfig,
    environmentVariables: JSON.parse(row.environment_variables) as Record<string, string>,
  };
}

/** Page tokens are not signed (page-token.ts): a cursor made by hand is checked like any input. */
function parseCursor(text: string): { name: string; id: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const isText = (value: unknown) => typeof value === "string" && textProblem(value) === undefined;
  if (!Array.isArray(parsed) || !isText(parsed[0]) || !isText(parsed[1])) {
    throw invalidParameter("page_token: not a token returned by this query");
  }
  return { name: parsed[0], id: parsed[1] };
}
