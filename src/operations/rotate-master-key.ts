// Master key rotation, safe while any number of servers run: every environment's data key is
// re-wrapped under a new master key. The steps, each committed before the next:
//   1. the database records the new key as added by its rotation; the key file gains it (under the
//      key file's lock, read afresh, every key kept); under the key ring's lock the database makes it
//      current: from then on every server wraps new data keys under it (or refuses, 503);
//   2. data keys not under the current key are re-wrapped, in batches, each under the ring's lock
//      (a wrap checks that the key is in the key file on disk, not only in memory);
//   3. under the ring's lock, the keys this database's rotations added that are not current and that
//      no stored data key refers to (counted then) are marked removed, committed durably; then they
//      leave the key file for `<key file>.retired`. A key this database did not add (the key file's
//      starting key, another database's key) is never removed.
// A crash between any two steps loses nothing, and re-running the rotation (with the same --new-key,
// or none) finishes the work. Secrets themselves are not re-encrypted: they are sealed with the data
// keys, which do not change.
import { randomBytes } from "node:crypto";
import { KEY_BYTES } from "../domain/secret-crypto.js";
import { MASTER_KEY_ENV, type LocalKeyProvider } from "../keys/local-key-provider.js";
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
  const { batchSize = DEFAULT_BATCH_SIZE, afterStep = () => {} } = options;
  if (keys.source.kind === "env" && !options.newKey) {
    throw new Error(`the master key comes from ${MASTER_KEY_ENV}: pass --new-key-file (or --new-key) with the base64 of a new ${KEY_BYTES}-byte key (see docs/operations.md, Master keys and rotation)`);
  }
  const newKey = options.newKey ?? randomBytes(KEY_BYTES);
  // Held before the check below: resuming a rotation cut short, some data keys are under it already.
  const newId = keys.hold(newKey);
  // Unwrap everything first: a data key that cannot be opened stops the rotation before any change.
  for (const row of await repository.allDataKeys()) {
    await keys.unwrap({ masterKeyId: row.master_key_id, wrapped: row.wrapped_key }, { enterpriseId: row.enterprise_id, environmentId: row.environment_id });
  }

  // Recorded (committed) before the key file changes, so a key this rotation adds is always one the
  // database knows it may remove later. A --new-key that is current already (a rotation to it was cut
  // short) is only held again: this one resumes it.
  await repository.transaction(async (tx) => {
    const current = await tx.lockCurrentMasterKey(keys.initialKeyId, "update");
    if (newId === current) return;
    const recorded = await tx.addedMasterKey(newId);
    refuseRetired(newId, recorded);
    if (!recorded && (await keys.inKeyFile(newId))) {
      throw new Error(`the new master key "${newId}" is in the key file already but was not added by a rotation of this database (another database sharing the key file uses it): pass a new key`);
    }
    await tx.recordAddedMasterKey(newId, Date.now());
  });
  // Also when resuming: a current key missing from the key file goes back into it.
  await keys.addKey(newKey);
  await afterStep("key-added");
  await repository.transaction(async (tx) => {
    const current = await tx.lockCurrentMasterKey(keys.initialKeyId, "update");
    if (current === newId) return;
    // A concurrent rotation may have retired or removed it meanwhile.
    refuseRetired(newId, await tx.addedMasterKey(newId));
    await tx.setCurrentMasterKey(newId, Date.now());
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

  // From the variable nothing is removed: the operator edits it (keys status shows what is unneeded).
  if (keys.source.kind !== "file") return { master_key_id: newId, rewrapped_data_keys: rewrapped, removed_master_key_ids: [] };
  const removable = await repository.durableTransaction(async (tx) => {
    const current = await tx.lockCurrentMasterKey(keys.initialKeyId, "update");
    const needed = await tx.dataKeyCounts();
    const ids = (await tx.addedMasterKeysExcept(current)).filter((id) => !needed.has(id));
    await tx.markMasterKeysRemoved(ids, Date.now());
    return ids;
  });
  const removed = await keys.removeKeys(new Set(removable));
  return { master_key_id: newId, rewrapped_data_keys: rewrapped, removed_master_key_ids: removed };
}

function refuseRetired(id: string, recorded: { retired_at_ms: number | null; removed_at_ms: number | null } | undefined): void {
  if (recorded && (recorded.retired_at_ms !== null || recorded.removed_at_ms !== null)) {
    throw new Error(`the new master key "${id}" was retired by an earlier rotation of this database and is not made current again: pass a new key`);
  }
}
