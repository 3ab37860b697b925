// Master key rotation: every environment's data key is re-wrapped under a new master key, in three
// crash-safe steps (the key file holds old and new keys until every data key is re-wrapped and
// committed; only then is the old key removed). Secrets themselves are not re-encrypted: they are
// sealed with the data keys, which do not change.
import type { LocalKeyProvider } from "../keys/local-key-provider.js";
import type { EnvironmentConfigRepository } from "../storage/environment-config-repository.js";

export interface RotationSummary {
  master_key_id: string;
  rewrapped_data_keys: number;
}

export async function rotateMasterKey(repository: EnvironmentConfigRepository, keys: LocalKeyProvider, newKey?: Buffer): Promise<RotationSummary> {
  // Unwrap everything first: a data key that cannot be opened stops the rotation before any change.
  const before = await repository.allDataKeys();
  for (const row of before) {
    await keys.unwrap({ masterKeyId: row.master_key_id, wrapped: row.wrapped_key }, { enterpriseId: row.enterprise_id, environmentId: row.environment_id });
  }
  const masterKeyId = await keys.beginRotation(newKey);
  let rewrapped = 0;
  await repository.transaction(async (tx) => {
    // Read again inside the transaction, so configurations created meanwhile are included.
    for (const row of await tx.allDataKeys()) {
      if (row.master_key_id === masterKeyId) continue;
      const context = { enterpriseId: row.enterprise_id, environmentId: row.environment_id };
      const dataKey = await keys.unwrap({ masterKeyId: row.master_key_id, wrapped: row.wrapped_key }, context);
      const wrapped = await keys.wrap(dataKey, context);
      await tx.replaceDataKey(row.environment_id, wrapped.masterKeyId, wrapped.wrapped);
      rewrapped++;
    }
  });
  await keys.finishRotation();
  return { master_key_id: masterKeyId, rewrapped_data_keys: rewrapped };
}
