// What `keys status` and `keys verify` report: the master keys (current or retired, held or not) with
// the data keys each wraps, and whether every stored data key unwraps with the keys held. Read only.
import { SecretDecryptionError } from "../domain/secret-crypto.js";
import { describeKeySource, type LocalKeyProvider } from "../keys/local-key-provider.js";
import type { EnvironmentConfigRepository } from "../storage/environment-config-repository.js";

export interface MasterKeyStatus {
  id: string;
  state: "current" | "retired";
  /** Whether this key source holds the key's material. */
  held: boolean;
  data_keys: number;
}

export interface KeyRingStatus {
  key_source: string;
  current_master_key_id: string;
  keys: MasterKeyStatus[];
}

export interface UnreadableConfig {
  enterprise_id: string;
  environment_id: string;
  name: string;
  master_key_id: string;
  reason: string;
}

export interface VerifyReport {
  ok: boolean;
  current_master_key_id: string;
  current_master_key_held: boolean;
  data_keys: number;
  unwrapped: number;
  unreadable: UnreadableConfig[];
}

/** Every key the source holds or a data key names, the current one first. A store with no ring yet reports the key it would start with. */
export async function keyRingStatus(repository: EnvironmentConfigRepository, keys: LocalKeyProvider): Promise<KeyRingStatus> {
  const current = (await repository.currentMasterKey()) ?? keys.initialKeyId;
  const counts = await repository.dataKeyCounts();
  const held = new Set(await keys.keyIds());
  const ids = [...new Set([current, ...[...held, ...counts.keys()].sort()])];
  return {
    key_source: describeKeySource(keys.source),
    current_master_key_id: current,
    keys: ids.map((id) => ({ id, state: id === current ? "current" : "retired", held: held.has(id), data_keys: counts.get(id) ?? 0 })),
  };
}

/** Unwraps every stored data key; ok when all open and the current key is held (else new secrets would be refused). */
export async function verifyDataKeys(repository: EnvironmentConfigRepository, keys: LocalKeyProvider): Promise<VerifyReport> {
  const current = (await repository.currentMasterKey()) ?? keys.initialKeyId;
  const rows = await repository.allDataKeys();
  const unreadable: UnreadableConfig[] = [];
  for (const row of rows) {
    try {
      await keys.unwrap({ masterKeyId: row.master_key_id, wrapped: row.wrapped_key }, { enterpriseId: row.enterprise_id, environmentId: row.environment_id });
    } catch (error) {
      if (!(error instanceof SecretDecryptionError)) throw error;
      unreadable.push({ enterprise_id: row.enterprise_id, environment_id: row.environment_id, name: row.name, master_key_id: row.master_key_id, reason: error.message });
    }
  }
  const currentHeld = (await keys.keyIds()).includes(current);
  return {
    ok: unreadable.length === 0 && currentHeld,
    current_master_key_id: current,
    current_master_key_held: currentHeld,
    data_keys: rows.length,
    unwrapped: rows.length - unreadable.length,
    unreadable,
  };
}
