// Seals one secret value with AES-256-GCM under a per-environment data key, bound to the row it belongs
// to, so a ciphertext copied to another enterprise, environment or key name fails to open.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

export interface SecretContext {
  enterpriseId: string;
  environmentId: string;
  key: string;
}

/** Any failure to open a sealed value. Messages name the reason, never a value or key material. */
export class SecretDecryptionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SecretDecryptionError";
  }
}

export const KEY_BYTES = 32;
const VERSION = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + NONCE_BYTES;
const SECRET_PURPOSE = "enterprise-admin/secret/v1";

export function newDataKey(): Buffer {
  return randomBytes(KEY_BYTES);
}

export function sealSecret(dataKey: Buffer, context: SecretContext, plaintext: string): Buffer {
  return sealBytes(dataKey, secretAssociatedData(context), Buffer.from(plaintext, "utf8"));
}

export function openSecret(dataKey: Buffer, context: SecretContext, sealed: Buffer): string {
  return openBytes(dataKey, secretAssociatedData(context), sealed).toString("utf8");
}

const secretAssociatedData = (c: SecretContext) => associatedData(SECRET_PURPOSE, [c.enterpriseId, c.environmentId, c.key]);

/**
 * Length-prefixes the purpose and every field (4-byte big-endian byte length, then UTF-8), so no two
 * different field lists encode alike: ("a","bc") and ("ab","c") differ, and a wrapped data key can never
 * pass for a secret because the purposes differ.
 */
export function associatedData(purpose: string, fields: readonly string[]): Buffer {
  const parts: Buffer[] = [];
  for (const text of [purpose, ...fields]) {
    const bytes = Buffer.from(text, "utf8");
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    parts.push(length, bytes);
  }
  return Buffer.concat(parts);
}

/** version 1 | 12-byte random nonce | ciphertext | 16-byte tag. A random nonce is safe: far under 2^32 seals per key. */
export function sealBytes(key: Buffer, aad: Buffer, plaintext: Buffer): Buffer {
  if (key.length !== KEY_BYTES) throw new RangeError(`an AES-256-GCM key must be ${KEY_BYTES} bytes, got ${key.length}`);
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(aad);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([Buffer.of(VERSION), nonce, ciphertext, cipher.getAuthTag()]);
}

export function openBytes(key: Buffer, aad: Buffer, sealed: Buffer): Buffer {
  if (key.length !== KEY_BYTES) throw new SecretDecryptionError(`cannot decrypt: the key must be ${KEY_BYTES} bytes`);
  if (sealed.length < HEADER_BYTES + TAG_BYTES) throw new SecretDecryptionError("cannot decrypt: the sealed value is truncated");
  if (sealed[0] !== VERSION) throw new SecretDecryptionError(`cannot decrypt: unsupported format version ${sealed[0]}`);
  const nonce = sealed.subarray(1, HEADER_BYTES);
  const ciphertext = sealed.subarray(HEADER_BYTES, sealed.length - TAG_BYTES);
  const tag = sealed.subarray(sealed.length - TAG_BYTES);
  const decipher = createDecipheriv("aes-256-gcm", key, nonce, { authTagLength: TAG_BYTES });
  decipher.setAAD(aad);
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]);
  } catch {
    // GCM cannot tell these apart, and saying more would help an attacker, not an operator.
    throw new SecretDecryptionError("cannot decrypt: wrong key, wrong context or tampered data");
  }
}
