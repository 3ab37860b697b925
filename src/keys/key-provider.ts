// The key-provider seam: wraps and unwraps per-environment data keys under a master key. The local
// provider keeps master keys in a file or the environment; a cloud KMS can implement the same interface.
import { associatedData, KEY_BYTES, openBytes, sealBytes, SecretDecryptionError } from "../domain/secret-crypto.js";

export interface DataKeyContext {
  enterpriseId: string;
  environmentId: string;
}

export interface WrappedDataKey {
  masterKeyId: string;
  wrapped: Buffer;
}

export interface KeyProvider {
  /** The master key a store starts with when its key ring (master_key_ring) names none yet. */
  readonly initialKeyId: string;
  /**
   * Wraps (encrypts) a data key under the named master key: the one the key ring names as current.
   * Throws MasterKeyNotHeldError when this provider cannot get that key, never wraps under another.
   */
  wrap(dataKey: Buffer, context: DataKeyContext, masterKeyId: string): Promise<WrappedDataKey>;
  /** Unwraps with the master key named by wrapped.masterKeyId; throws SecretDecryptionError if unknown or tampered. */
  unwrap(wrapped: WrappedDataKey, context: DataKeyContext): Promise<Buffer>;
}

/** The provider has no master key of that id (its source lacks it): a state of this server, not of the data. */
export class MasterKeyNotHeldError extends SecretDecryptionError {
  constructor(readonly masterKeyId: string, message: string) {
    super(message);
    this.name = "MasterKeyNotHeldError";
  }
}

// Its own purpose label, so a wrapped data key can never be opened as a secret value or the reverse.
const DATA_KEY_PURPOSE = "enterprise-admin/data-key/v1";

// The master key id is bound too: a wrap relabelled with another key's id fails instead of misleading.
const dataKeyAssociatedData = (context: DataKeyContext, masterKeyId: string) =>
  associatedData(DATA_KEY_PURPOSE, [context.enterpriseId, context.environmentId, masterKeyId]);

/** AES-256-GCM of the data key under a master key held in memory (the local provider's way). */
export function wrapWithMasterKey(masterKey: Buffer, masterKeyId: string, dataKey: Buffer, context: DataKeyContext): WrappedDataKey {
  if (dataKey.length !== KEY_BYTES) throw new RangeError(`a data key must be ${KEY_BYTES} bytes, got ${dataKey.length}`);
  return { masterKeyId, wrapped: sealBytes(masterKey, dataKeyAssociatedData(context, masterKeyId), dataKey) };
}

export function unwrapWithMasterKey(masterKey: Buffer, wrapped: WrappedDataKey, context: DataKeyContext): Buffer {
  const dataKey = openBytes(masterKey, dataKeyAssociatedData(context, wrapped.masterKeyId), wrapped.wrapped);
  if (dataKey.length !== KEY_BYTES) throw new SecretDecryptionError(`cannot unwrap: the data key is not ${KEY_BYTES} bytes`);
  return dataKey;
}
