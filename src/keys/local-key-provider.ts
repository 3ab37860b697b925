// Master keys held locally: from ENTERPRISE_ADMIN_MASTER_KEY (one key, or several separated by commas),
// or from a 0600 JSON key file (created on first use beside the SQLite database). Which key wraps new
// data keys is the database's to say (master_key_ring); this ring only holds key material. A key named
// there but not in memory is looked for in the key file again, since a rotation elsewhere adds keys,
// and a key wraps only while it is in the key file on disk, so nothing is wrapped under a key that a
// rotation or a hand edit has removed. Every change of the key file happens under its lock file.
import { createHash, randomBytes } from "node:crypto";
import { constants, readFileSync, statSync } from "node:fs";
import { link, mkdir, open, readFile, rename, stat, unlink } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { KEY_BYTES } from "../domain/secret-crypto.js";
import { isPostgresUrl, sqliteFilePath } from "../storage/database.js";
import { BadSetting } from "../env-number.js";
import { withFileLock } from "./file-lock.js";
import { MasterKeyNotHeldError, unwrapWithMasterKey, wrapWithMasterKey, type DataKeyContext, type KeyProvider, type WrappedDataKey } from "./key-provider.js";

export const MASTER_KEY_ENV = "ENTERPRISE_ADMIN_MASTER_KEY";
export const MASTER_KEY_FILE_ENV = "ENTERPRISE_ADMIN_MASTER_KEY_FILE";

export type KeySource = { kind: "env" } | { kind: "file"; path: string };

interface MasterKey {
  id: string;
  key: Buffer;
  created?: string;
}

/**
 * The key file on disk. `current` names the key a store with an empty key ring starts with: set when
 * the file is created and never moved, so no rotation can remove a key another database sharing the
 * file may have started with.
 */
interface KeyFile {
  current: string;
  keys: { id: string; key: string; created?: string }[];
}

/**
 * The key file's path is set but no file is there (commands that only read do not create one, nor does any command when the database's
 * secrets are under `storeKeyId`, its ring's current key: a new key file would open none of them). For a merge of `mergedFrom` (a
 * restore), the machine may have no key file at all: then the backup's is copied into place.
 */
export class KeyFileMissingError extends Error {
  constructor(readonly path: string, readonly hints: { storeKeyId?: string; mergedFrom?: string } = {}) {
    const { storeKeyId, mergedFrom } = hints;
    const restore = storeKeyId === undefined ? ";"
      : `, and this database's secrets are under master key "${storeKeyId}", which a new key file would not open: restore the key file from a backup, or`;
    super(`key file ${path} does not exist${restore} set ${MASTER_KEY_FILE_ENV} (or ${MASTER_KEY_ENV}) as the servers have it` +
      (mergedFrom === undefined ? "" : `, or, on a machine without a key file, copy ${mergedFrom} to ${path} (mode 0600) instead of merging`));
    this.name = "KeyFileMissingError";
  }
}

export class LocalKeyProvider implements KeyProvider {
  readonly source: KeySource;
  readonly #initialKeyId: string;
  #keys: Map<string, MasterKey>;
  /** The key file as last read, by its stat stamp: a wrap stats the file and reads it again only when it changed. */
  #onDisk: { stamp: string; keys: Map<string, Buffer> } | undefined;

  constructor(source: KeySource, keys: MasterKey[], initialKeyId: string) {
    if (!keys.some((k) => k.id === initialKeyId)) throw new Error(`master key "${initialKeyId}" is not among the keys held`);
    this.source = source;
    this.#keys = new Map(keys.map((k) => [k.id, k]));
    this.#initialKeyId = initialKeyId;
  }

  get initialKeyId(): string {
    return this.#initialKeyId;
  }

  async wrap(dataKey: Buffer, context: DataKeyContext, masterKeyId: string): Promise<WrappedDataKey> {
    const master = await this.#get(masterKeyId);
    if (!master) throw new MasterKeyNotHeldError(masterKeyId, `cannot wrap: master key "${masterKeyId}" is current in the database but not held (${describeKeySource(this.source)})`);
    // Held in memory is not enough: a key gone from the file would be lost when this process ends.
    let onDisk: boolean;
    try {
      onDisk = this.#isOnDisk(master);
    } catch (error) {
      throw unreadableKeyFile(masterKeyId, error);
    }
    if (!onDisk) {
      throw new MasterKeyNotHeldError(masterKeyId, `cannot wrap: master key "${masterKeyId}" is current in the database but no longer in ${describeKeySource(this.source)}`);
    }
    return wrapWithMasterKey(master.key, masterKeyId, dataKey, context);
  }

  async unwrap(wrapped: WrappedDataKey, context: DataKeyContext): Promise<Buffer> {
    const master = await this.#get(wrapped.masterKeyId);
    if (!master) {
      const id = wrapped.masterKeyId;
      throw new MasterKeyNotHeldError(id, `cannot unwrap: master key "${id}" is not held (${describeKeySource(this.source)})${await this.#retiredHint(id)}`);
    }
    return unwrapWithMasterKey(master.key, wrapped, context);
  }

  /** Where a key not held is to be found when a rotation retired it: the way back, for the operator. */
  async #retiredHint(id: string): Promise<string> {
    if (this.source.kind !== "file") return "";
    const retiredPath = retiredPathOf(this.source.path);
    const retired = await readKeyFile(retiredPath).catch(() => undefined);
    return retired?.keys.some((k) => k.id === id) ? `; it is in ${retiredPath}: \`enterprise-admin keys merge ${retiredPath}\` adds it back` : "";
  }

  /** The ids held now, after reading the key file again. */
  async keyIds(): Promise<string[]> {
    await this.#reload();
    return [...this.#keys.keys()];
  }

  /** The id a key gets in this source: the same bytes get the same id in every process. */
  keyIdFor(key: Buffer): string {
    return keyId(this.source.kind === "env" ? "env" : "local", key);
  }

  /** Whether the key file on disk holds this id now (never, from the variable). */
  async inKeyFile(id: string): Promise<boolean> {
    return this.source.kind === "file" && ((await readKeyFile(this.source.path))?.keys.some((k) => k.id === id) ?? false);
  }

  /** Holds `key` in memory only (it opens what it wrapped; it wraps only once it is in the key file). Returns its id. */
  hold(key: Buffer): string {
    if (key.length !== KEY_BYTES) throw new Error(`a new master key must be exactly ${KEY_BYTES} bytes, got ${key.length}`);
    const id = this.keyIdFor(key);
    if (!this.#keys.has(id)) this.#keys.set(id, { id, key: Buffer.from(key), created: new Date().toISOString() });
    return id;
  }

  /**
   * Rotation, first step: under the key file's lock, the file read afresh gains `key` (every other key
   * and its "current" kept), written durably before the caller makes it current in the database. From
   * the variable, the key is only held in memory: the operator gives it to the instances.
   */
  async addKey(key: Buffer): Promise<string> {
    const id = this.hold(key);
    const added = this.#keys.get(id)!;
    if (this.source.kind === "file") {
      const path = this.source.path;
      await withFileLock(lockPathOf(path), async () => {
        const file = await readKeyFile(path);
        if (!file) throw new KeyFileMissingError(path);
        if (!file.keys.some((k) => k.id === id)) await writeKeyFile(path, [...file.keys, added], file.currentId);
      });
    }
    return id;
  }

  /**
   * Restore: under the key file's lock, the file read afresh gains every key of another key file (a backup's, or its `.retired`) that
   * it lacks. Nothing is removed and its "current" stays, so the keys of rotations since that backup, which other copies of this
   * database or other databases of the file may need, are kept. Returns the ids added.
   */
  async addKeysFrom(otherPath: string): Promise<string[]> {
    if (this.source.kind !== "file") throw new Error(`the master keys come from ${MASTER_KEY_ENV}: add the backup's keys to the variable`);
    const other = await readKeyFile(otherPath);
    if (!other) throw new Error(`${otherPath}: no such key file`);
    const path = this.source.path;
    return withFileLock(lockPathOf(path), async () => {
      const file = await readKeyFile(path);
      if (!file) throw new KeyFileMissingError(path, { mergedFrom: otherPath });
      const added = other.keys.filter((key) => !file.keys.some((own) => own.id === key.id));
      if (added.length > 0) await writeKeyFile(path, [...file.keys, ...added], file.currentId);
      for (const key of added) this.#keys.set(key.id, key);
      return added.map((key) => key.id);
    });
  }

  /**
   * Rotation, last step: under the key file's lock, the keys named leave the file read afresh (the
   * file's "current", which a new store starts with, never does); they go to `<key file>.retired`
   * (mode 0600), so a backup of the database from before the rotation can still be opened. Returns the
   * ids removed; from the variable, none (the operator edits it).
   */
  async removeKeys(ids: ReadonlySet<string>): Promise<string[]> {
    if (this.source.kind !== "file") return [];
    const path = this.source.path;
    return withFileLock(lockPathOf(path), async () => {
      const file = await readKeyFile(path);
      if (!file) return [];
      const removed = file.keys.filter((k) => ids.has(k.id) && k.id !== file.currentId);
      if (removed.length === 0) return [];
      const retiredPath = retiredPathOf(path);
      const retired = (await readKeyFile(retiredPath))?.keys ?? [];
      const keepRetired = [...retired.filter((r) => !removed.some((k) => k.id === r.id)), ...removed];
      // The retired file first: a crash between the two writes leaves a key in both, never in neither.
      await writeKeyFile(retiredPath, keepRetired, keepRetired[0]!.id);
      await writeKeyFile(path, file.keys.filter((k) => !removed.includes(k)), file.currentId);
      return removed.map((k) => k.id);
    });
  }

  async #get(id: string): Promise<MasterKey | undefined> {
    if (!this.#keys.has(id)) await this.#reload().catch((error: unknown) => { throw unreadableKeyFile(id, error); });
    return this.#keys.get(id);
  }

  /** Adds the key file's keys to those held; never forgets one, so a key removed from the file by hand still opens what it wrapped here. */
  async #reload(): Promise<void> {
    if (this.source.kind !== "file") return;
    for (const key of (await readKeyFile(this.source.path))?.keys ?? []) {
      if (!this.#keys.has(key.id)) this.#keys.set(key.id, key);
    }
  }

  /**
   * Whether the key file on disk holds this very key (always, from the variable). Synchronous on
   * purpose: it runs inside the transaction that holds the ring's lock (SQLite: the write lock), which
   * must not wait on the event loop.
   */
  #isOnDisk(master: MasterKey): boolean {
    if (this.source.kind !== "file") return true;
    let info: ReturnType<typeof statSync>;
    try {
      info = statSync(this.source.path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
      throw error;
    }
    // ctime: a change of mode makes a new stamp too.
    const stamp = `${info.dev}:${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
    if (this.#onDisk?.stamp !== stamp) {
      if (!info.isFile()) throw new Error(`key file ${this.source.path} is not a file`);
      checkKeyFileMode(this.source.path, Number(info.mode));
      const file = parseKeyFileText(readFileSync(this.source.path, "utf8"), this.source.path);
      this.#onDisk = { stamp, keys: new Map((file?.keys ?? []).map((k) => [k.id, k.key])) };
    }
    return this.#onDisk.keys.get(master.id)?.equals(master.key) ?? false;
  }
}

/**
 * The variable wins (one base64 key, or several separated by commas: the first is the one a new store
 * starts with), then the named key file, then the default key file, created when missing unless `create`
 * is false or the database's secrets are under a key already (`storeKeyId`, its ring's current): then
 * KeyFileMissingError.
 */
export async function loadLocalKeyProvider(options: { databaseUrl: string; env?: NodeJS.ProcessEnv; create?: boolean; storeKeyId?: string })
  : Promise<LocalKeyProvider> {
  const env = options.env ?? process.env;
  // An empty variable counts as unset, as shells and .env files commonly leave them.
  const fromEnv = env[MASTER_KEY_ENV];
  if (fromEnv) {
    const texts = fromEnv.split(",");
    const keys: MasterKey[] = [];
    for (const [index, text] of texts.entries()) {
      const key = decodeKey(text, texts.length === 1 ? MASTER_KEY_ENV : `${MASTER_KEY_ENV} (key ${index + 1} of ${texts.length})`);
      const id = keyId("env", key);
      if (!keys.some((k) => k.id === id)) keys.push({ id, key });
    }
    return new LocalKeyProvider({ kind: "env" }, keys, keys[0]!.id);
  }
  const path = resolve(env[MASTER_KEY_FILE_ENV] || defaultKeyFilePath(options.databaseUrl));
  const found = await readKeyFile(path);
  if (!found && (options.create === false || options.storeKeyId !== undefined)) throw new KeyFileMissingError(path, { storeKeyId: options.storeKeyId });
  const file = found ?? (await createKeyFile(path));
  return new LocalKeyProvider({ kind: "file", path }, file.keys, file.currentId);
}

/** `master.key` beside a SQLite database file; `./data/master.key` for PostgreSQL or an in-memory database. */
export function defaultKeyFilePath(databaseUrl: string): string {
  if (isPostgresUrl(databaseUrl) || databaseUrl === ":memory:") return resolve("data", "master.key");
  return join(dirname(resolve(sqliteFilePath(databaseUrl))), "master.key");
}

const lockPathOf = (keyFilePath: string) => `${keyFilePath}.lock`;
/** Where a rotation moves the keys it removes: same format (its "current" means nothing there). */
const retiredPathOf = (keyFilePath: string) => `${keyFilePath}.retired`;

// The id names the key without revealing it: 48 bits of a hash of 256 random bits.
const keyId = (prefix: string, key: Buffer) => `${prefix}-${createHash("sha256").update(key).digest("hex").slice(0, 12)}`;

export const describeKeySource = (source: KeySource) => (source.kind === "env" ? MASTER_KEY_ENV : `key file ${source.path}`);

/** Strict base64 of exactly 32 bytes; the error names where the key came from, never its value. */
export function decodeKey(text: string, where: string): Buffer {
  const trimmed = text.trim();
  const expected = `must be the base64 encoding of exactly ${KEY_BYTES} bytes`;
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(trimmed) || trimmed.length % 4 !== 0) throw new BadSetting(`${where} ${expected} (it is not valid base64)`);
  const key = Buffer.from(trimmed, "base64");
  if (key.length !== KEY_BYTES) throw new BadSetting(`${where} ${expected} (it decodes to ${key.length} bytes)`);
  return key;
}

async function readKeyFile(path: string): Promise<{ keys: MasterKey[]; currentId: string } | undefined> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  if (!info.isFile()) throw new Error(`key file ${path} is not a file`);
  checkKeyFileMode(path, Number(info.mode));
  return parseKeyFileText(await readFile(path, "utf8"), path);
}

function checkKeyFileMode(path: string, mode: number): void {
  if (process.platform !== "win32" && (mode & 0o077) !== 0) {
    const octal = (mode & 0o777).toString(8).padStart(3, "0");
    throw new Error(`key file ${path} is accessible to group or others (mode ${octal}); restrict it with: chmod 600 ${path}`);
  }
}

/**
 * A key file a serving process cannot read now (a permission or mode changed, a damaged copy put in place): its keys are not to be had
 * until it is mended, which the caller is told as for a key not held (503, retry) and the log as what is wrong with the file.
 */
function unreadableKeyFile(id: string, error: unknown): MasterKeyNotHeldError {
  return new MasterKeyNotHeldError(id, `master key "${id}" cannot be read: ${error instanceof Error ? error.message : String(error)}`);
}

function parseKeyFileText(text: string, path: string): { keys: MasterKey[]; currentId: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
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
    // An id made here names its key's hash: one whose bytes were swapped or damaged would wrap data keys no copy of the file opens.
    if (/^local-[0-9a-f]{12}$/.test(entry.id) && keyId("local", key) !== entry.id) {
      throw new Error(`key file ${path}: master key "${entry.id}" is not the key of that id (an id local-… is the first 12 hex digits of its key's SHA-256): the key was changed or damaged; restore the file from a backup`);
    }
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
