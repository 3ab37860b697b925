// Master keys held locally: from ENTERPRISE_ADMIN_MASTER_KEY, or from a 0600 JSON key file (created on
// first use beside the SQLite database). Rotation is three crash-safe steps; no step ever loses a key.
import { createHash, randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { link, mkdir, open, readFile, rename, stat, unlink } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { KEY_BYTES, SecretDecryptionError } from "../domain/secret-crypto.js";
import { unwrapWithMasterKey, wrapWithMasterKey, type DataKeyContext, type KeyProvider, type WrappedDataKey } from "./key-provider.js";

export const MASTER_KEY_ENV = "ENTERPRISE_ADMIN_MASTER_KEY";
export const MASTER_KEY_FILE_ENV = "ENTERPRISE_ADMIN_MASTER_KEY_FILE";

export type KeySource = { kind: "env" } | { kind: "file"; path: string };

interface MasterKey {
  id: string;
  key: Buffer;
  created?: string;
}

/** The key file on disk. `created` is kept when present but not required of a hand-made file. */
interface KeyFile {
  current: string;
  keys: { id: string; key: string; created?: string }[];
}

export class LocalKeyProvider implements KeyProvider {
  readonly source: KeySource;
  #keys: MasterKey[];
  #currentId: string;

  constructor(source: KeySource, keys: MasterKey[], currentId: string) {
    if (!keys.some((k) => k.id === currentId)) throw new Error(`master key "${currentId}" is not among the keys held`);
    this.source = source;
    this.#keys = keys;
    this.#currentId = currentId;
  }

  get currentKeyId(): string {
    return this.#currentId;
  }

  async wrap(dataKey: Buffer, context: DataKeyContext): Promise<WrappedDataKey> {
    return wrapWithMasterKey(this.#find(this.#currentId)!.key, this.#currentId, dataKey, context);
  }

  async unwrap(wrapped: WrappedDataKey, context: DataKeyContext): Promise<Buffer> {
    const master = this.#find(wrapped.masterKeyId);
    if (!master) throw new SecretDecryptionError(`cannot unwrap: master key "${wrapped.masterKeyId}" is not held (${describeSource(this.source)})`);
    return unwrapWithMasterKey(master.key, wrapped, context);
  }

  keyIds(): string[] {
    return this.#keys.map((k) => k.id);
  }

  /** Step 1: adds a new random master key (or the given one) as current, persisting the key file with old AND new keys; returns the new id. For the env-var source, `newKey` is required (else throw an error saying to pass --new-key) and nothing is persisted (the operator sets the variable afterwards). */
  async beginRotation(newKey?: Buffer): Promise<string> {
    if (this.source.kind === "env" && !newKey) {
      throw new Error(`the master key comes from ${MASTER_KEY_ENV}: pass --new-key with the base64 of a new ${KEY_BYTES}-byte key, then set ${MASTER_KEY_ENV} to it once the rotation has finished`);
    }
    const key = newKey ?? randomBytes(KEY_BYTES);
    if (key.length !== KEY_BYTES) throw new Error(`a new master key must be exactly ${KEY_BYTES} bytes, got ${key.length}`);
    const id = keyId(this.source.kind === "env" ? "env" : "local", key);
    if (this.#find(id)) throw new Error(`master key "${id}" is already held: a rotation needs a new key`);
    const keys = [...this.#keys, { id, key: Buffer.from(key), created: new Date().toISOString() }];
    // Persist before switching in memory, so nothing is ever wrapped under a key that is not on disk.
    if (this.source.kind === "file") await writeKeyFile(this.source.path, keys, id);
    this.#keys = keys;
    this.#currentId = id;
    return id;
  }

  /** Step 3 (after the caller re-wrapped every data key under the new current key and committed): removes every other key from the file. */
  async finishRotation(): Promise<void> {
    const keys = this.#keys.filter((k) => k.id === this.#currentId);
    if (this.source.kind === "file") await writeKeyFile(this.source.path, keys, this.#currentId);
    this.#keys = keys;
  }

  #find(id: string): MasterKey | undefined {
    return this.#keys.find((k) => k.id === id);
  }
}

/** The env variable wins, then the named key file, then the default key file (created when missing). */
export async function loadLocalKeyProvider(options: { databaseUrl: string; env?: NodeJS.ProcessEnv }): Promise<LocalKeyProvider> {
  const env = options.env ?? process.env;
  // An empty variable counts as unset, as shells and .env files commonly leave them.
  const fromEnv = env[MASTER_KEY_ENV];
  if (fromEnv) {
    const key = decodeKey(fromEnv, MASTER_KEY_ENV);
    const id = keyId("env", key);
    return new LocalKeyProvider({ kind: "env" }, [{ id, key }], id);
  }
  const path = resolve(env[MASTER_KEY_FILE_ENV] || defaultKeyFilePath(options.databaseUrl));
  const file = (await readKeyFile(path)) ?? (await createKeyFile(path));
  return new LocalKeyProvider({ kind: "file", path }, file.keys, file.currentId);
}

/** `master.key` beside a SQLite database file; `./data/master.key` for PostgreSQL or an in-memory database. */
export function defaultKeyFilePath(databaseUrl: string): string {
  if (/^postgres(ql)?:\/\//.test(databaseUrl) || databaseUrl === ":memory:") return resolve("data", "master.key");
  const dbPath = databaseUrl.startsWith("file:") ? fileURLToPath(databaseUrl) : databaseUrl;
  return join(dirname(resolve(dbPath)), "master.key");
}

// The id names the key without revealing it: 48 bits of a hash of 256 random bits.
const keyId = (prefix: string, key: Buffer) => `${prefix}-${createHash("sha256").update(key).digest("hex").slice(0, 12)}`;

const describeSource = (source: KeySource) => (source.kind === "env" ? MASTER_KEY_ENV : `key file ${source.path}`);

/** Strict base64 of exactly 32 bytes; the error names where the key came from, never its value. */
function decodeKey(text: string, where: string): Buffer {
  const trimmed = text.trim();
  const expected = `must be the base64 encoding of exactly ${KEY_BYTES} bytes`;
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(trimmed) || trimmed.length % 4 !== 0) throw new Error(`${where} ${expected} (it is not valid base64)`);
  const key = Buffer.from(trimmed, "base64");
  if (key.length !== KEY_BYTES) throw new Error(`${where} ${expected} (it decodes to ${key.length} bytes)`);
  return key;
}

async function readKeyFile(path: string): Promise<{ keys: MasterKey[]; currentId: string } | undefined> {
  let mode: number;
  try {
    mode = (await stat(path)).mode;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  if (process.platform !== "win32" && (mode & 0o077) !== 0) {
    const octal = (mode & 0o777).toString(8).padStart(3, "0");
    throw new Error(`key file ${path} is accessible to group or others (mode ${octal}); restrict it with: chmod 600 ${path}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, "utf8"));
  } catch {
    // JSON.parse quotes the text around a syntax error, which here could be key material: say no more.
    throw new Error(`key file ${path} is not valid JSON`);
  }
  return parseKeyFile(parsed, path);
}

function parseKeyFile(parsed: unknown, path: string): { keys: MasterKey[]; currentId: string } {
  const bad = (what: string) => new Error(`key file ${path}: ${what}; expected {"current":"<id>","keys":[{"id":"<id>","key":"<base64>","created":"<iso>"}]}`);
  const file = parsed as Partial<KeyFile> | null;
  if (typeof file !== "object" || file === null || typeof file.current !== "string" || !Array.isArray(file.keys) || file.keys.length === 0) {
    throw bad("missing \"current\" or a non-empty \"keys\" list");
  }
  const keys: MasterKey[] = [];
  for (const [index, entry] of file.keys.entries()) {
    if (typeof entry !== "object" || entry === null || typeof entry.id !== "string" || entry.id === "" || typeof entry.key !== "string") {
      throw bad(`keys[${index}] needs a non-empty "id" and a "key"`);
    }
    if (keys.some((k) => k.id === entry.id)) throw bad(`master key id "${entry.id}" appears twice`);
    const key = decodeKey(entry.key, `key file ${path}: master key "${entry.id}"`);
    keys.push({ id: entry.id, key, ...(typeof entry.created === "string" ? { created: entry.created } : {}) });
  }
  if (!keys.some((k) => k.id === file.current)) throw bad(`"current" names "${file.current}", which is not in "keys"`);
  return { keys, currentId: file.current };
}

async function createKeyFile(path: string): Promise<{ keys: MasterKey[]; currentId: string }> {
  const key = randomBytes(KEY_BYTES);
  const keys = [{ id: keyId("local", key), key, created: new Date().toISOString() }];
  const created = await writeKeyFile(path, keys, keys[0]!.id, { exclusive: true });
  // Another process created it first: use theirs, or the two would encrypt under different keys.
  if (!created) return (await readKeyFile(path))!;
  return { keys, currentId: keys[0]!.id };
}

/**
 * Writes a 0600 temp file in the same folder, flushes it, then renames it over the key file, so a crash
 * leaves either the old file or the new one, never half of one. With `exclusive`, it links instead of
 * renaming and returns false when a key file already exists.
 */
async function writeKeyFile(path: string, keys: MasterKey[], currentId: string, options: { exclusive?: boolean } = {}): Promise<boolean> {
  const folder = dirname(path);
  await mkdir(folder, { recursive: true });
  const content: KeyFile = {
    current: currentId,
    keys: keys.map((k) => ({ id: k.id, key: k.key.toString("base64"), ...(k.created ? { created: k.created } : {}) })),
  };
  const temp = join(folder, `.master.key.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  const handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(content, null, 2)}\n`, "utf8");
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    if (options.exclusive) {
      try {
        await link(temp, path);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "EEXIST") return false;
        // A filesystem without hard links: fall back to a plain rename (loses only the race guard).
        if (code !== "EPERM" && code !== "ENOTSUP" && code !== "ENOSYS") throw error;
        await rename(temp, path);
      }
    } else {
      await rename(temp, path);
    }
  } finally {
    await unlink(temp).catch(() => {});
  }
  await syncFolder(folder);
  return true;
}

// Makes the rename itself durable; folders cannot be opened for sync on Windows, where this is skipped.
async function syncFolder(folder: string): Promise<void> {
  if (process.platform === "win32") return;
  const handle = await open(folder, "r");
  try {
    await handle.sync();
  } catch {
    // Some filesystems refuse to sync a folder; the rename has happened, only its durability is weaker.
  } finally {
    await handle.close();
  }
}
