// Master key rotation, safe while any number of servers run: every environment's data key is
// re-wrapped under a new master key. The steps, each committed before the next:
//   1. under the key ring's lock, the key file gains the new key (old keys kept), then the database
//      makes it current: from then on every server wraps new data keys under it (or refuses, 503);
//   2. data keys not under the current key are re-wrapped, in batches, each under the ring's lock;
//   3. under the ring's lock, the keys no stored data key refers to (counted then) leave the key file.
// A crash between any two steps loses nothing: the key file only ever loses keys no data key needs,
// and re-running the rotation (with the same --new-key, or none) finishes the work. Secrets themselves are not re-encrypted: they are
// sealed with the data keys, which do not change.
import type { LocalKeyProvider } from "../keys/local-key-provider.js";
import type { EnvironmentConfigRepository } from "../storage/environment-config-repository.js";

export interface RotationSummary {
  master_key_id: string;
  rewrapped_data_keys: number;
  /** Retired keys that no data key needed, removed from the key file (none from the variable). */
  removed_master_key_ids: string[];
}

export type RotationStep = "key-added" | "key-made-current" | "batch-rewrapped" | "all-rewrapped";

export interface RotationOptions {
  /** The new master key (required when the keys come from ENTERPRISE_ADMIN_MASTER_KEY); else a random one. */
  newKey?: Buffer;
  /** Data keys re-wrapped per transaction: bounds how long the ring's lock is held. */
  batchSize?: number;
  /** For tests: runs after each step; what it throws stops the rotation there, as a crash would. */
  afterStep?: (step: RotationStep) => Promise<void> | void;
}

const DEFAULT_BATCH_SIZE = 500;

export async function rotateMasterKey(repository: EnvironmentConfigRepository, keys: LocalKeyProvider, options: RotationOptions = {}): Promise<RotationSummary> {
  const { newKey, batchSize = DEFAULT_BATCH_SIZE, afterStep = () => {} } = options;
  // Unwrap everything first: a data key that cannot be opened stops the rotation before any change.
  for (const row of await repository.allDataKeys()) {
    await keys.unwrap({ masterKeyId: row.master_key_id, wrapped: row.wrapped_key }, { enterpriseId: row.enterprise_id, environmentId: row.environment_id });
  }

  const masterKeyId = await repository.transaction(async (tx) => {
    const current = await tx.lockCurrentMasterKey(keys.initialKeyId, "update");
    // A --new-key that is current already (a rotation to it was cut short) is only held again: this one resumes it.
    const added = await keys.addKey(newKey);
    await afterStep("key-added");
    if (added !== current) await tx.setCurrentMasterKey(added);
    return added;
  });
  await afterStep("key-made-current");

  let rewrapped = 0;
  for (;;) {
    const count = await repository.transaction(async (tx) => {
      // The ring's current key again: a later rotation may have moved on, and then its key is the one to use.
      const current = await tx.lockCurrentMasterKey(keys.initialKeyId, "share");
      const rows = await tx.dataKeysNotUnder(current, batchSize);
      for (const row of rows) {
        const context = { enterpriseId: row.enterprise_id, environmentId: row.environment_id };
        const dataKey = await keys.unwrap({ masterKeyId: row.master_key_id, wrapped: row.wrapped_key }, context);
        const wrapped = await keys.wrap(dataKey, context, current);
        await tx.replaceDataKey(row.environment_id, wrapped.masterKeyId, wrapped.wrapped);
      }
      return rows.length;
    });
    rewrapped += count;
    if (count < batchSize) break;
    await afterStep("batch-rewrapped");
  }
  await afterStep("all-rewrapped");

  const removed = await repository.transaction(async (tx) => {
    const current = await tx.lockCurrentMasterKey(keys.initialKeyId, "update");
    const needed = new Set((await tx.dataKeyCounts()).keys());
    return keys.removeKeysExcept(needed, current);
  });
  return { master_key_id: masterKeyId, rewrapped_data_keys: rewrapped, removed_master_key_ids: removed };
}
