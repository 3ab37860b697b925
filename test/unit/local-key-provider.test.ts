import { createHash, randomBytes } from "node:crypto";
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { newDataKey, SecretDecryptionError } from "../../src/domain/secret-crypto.js";
import { defaultKeyFilePath, loadLocalKeyProvider } from "../../src/keys/local-key-provider.js";

const onWindows = process.platform === "win32";
const context = { enterpriseId: "ent-1", environmentId: "env-1" };

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "key-provider-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A provider from the default key file beside a SQLite database in the temp dir, with no env vars. */
const loadBesideDb = () => loadLocalKeyProvider({ databaseUrl: join(dir, "admin.sqlite"), env: {} });
const modeOf = async (path: string) => (await stat(path)).mode & 0o777;
const envId = (key: Buffer) => `env-${createHash("sha256").update(key).digest("hex").slice(0, 12)}`;

describe("wrapping data keys", () => {
  it("a wrapped data key unwraps to the same bytes under the same context", async () => {
    const provider = await loadBesideDb();
    const dataKey = newDataKey();
    const wrapped = await provider.wrap(dataKey, context);
    expect(wrapped.masterKeyId).toBe(provider.currentKeyId);
    expect(wrapped.wrapped).toHaveLength(1 + 12 + 32 + 16);
    expect((await provider.unwrap(wrapped, context)).equals(dataKey)).toBe(true);
  });

  it("unwrapping under another environment or enterprise is refused", async () => {
    const provider = await loadBesideDb();
    const wrapped = await provider.wrap(newDataKey(), context);
    await expect(provider.unwrap(wrapped, { ...context, environmentId: "env-2" })).rejects.toBeInstanceOf(SecretDecryptionError);
    await expect(provider.unwrap(wrapped, { ...context, enterpriseId: "ent-2" })).rejects.toBeInstanceOf(SecretDecryptionError);
  });

  it("an unknown master key id and a tampered wrap are refused", async () => {
    const provider = await loadBesideDb();
    const wrapped = await provider.wrap(newDataKey(), context);
    await expect(provider.unwrap({ ...wrapped, masterKeyId: "local-000000000000" }, context)).rejects.toThrow(SecretDecryptionError);
    await expect(provider.unwrap({ ...wrapped, masterKeyId: "local-000000000000" }, context)).rejects.toThrow('master key "local-000000000000" is not held');
    const tampered = Buffer.from(wrapped.wrapped);
    tampered[20]! ^= 0x80;
    await expect(provider.unwrap({ ...wrapped, wrapped: tampered }, context)).rejects.toBeInstanceOf(SecretDecryptionError);
  });

  it("a wrap relabelled with another held master key's id is refused", async () => {
    const provider = await loadBesideDb();
    const wrapped = await provider.wrap(newDataKey(), context);
    const newId = await provider.beginRotation();
    await expect(provider.unwrap({ ...wrapped, masterKeyId: newId }, context)).rejects.toBeInstanceOf(SecretDecryptionError);
  });
});

describe("the key file", () => {
  it("is created beside the SQLite database with mode 0600 and reused on the next load", async () => {
    const first = await loadBesideDb();
    const path = join(dir, "master.key");
    expect(first.source).toEqual({ kind: "file", path });
    if (!onWindows) expect(await modeOf(path)).toBe(0o600);
    const file = JSON.parse(await readFile(path, "utf8"));
    expect(file.current).toBe(first.currentKeyId);
    expect(file.keys).toHaveLength(1);
    expect(file.keys[0]).toMatchObject({ id: first.currentKeyId, created: expect.any(String) });
    expect(Buffer.from(file.keys[0].key, "base64")).toHaveLength(32);

    const wrapped = await first.wrap(newDataKey(), context);
    const second = await loadBesideDb();
    expect(second.currentKeyId).toBe(first.currentKeyId);
    expect((await second.unwrap(wrapped, context)).equals(await first.unwrap(wrapped, context))).toBe(true);
    expect((await readdir(dir)).filter((name) => name.endsWith(".tmp"))).toEqual([]);
  });

  it("a file: URL database and a missing folder are handled: the folder is created", async () => {
    const databaseUrl = pathToFileURL(join(dir, "nested", "deeper", "admin.sqlite")).href;
    const provider = await loadLocalKeyProvider({ databaseUrl, env: {} });
    expect(provider.source).toEqual({ kind: "file", path: join(dir, "nested", "deeper", "master.key") });
    await stat(join(dir, "nested", "deeper", "master.key"));
  });

  it("for PostgreSQL the default key file is ./data/master.key", () => {
    expect(defaultKeyFilePath("postgres://user@localhost:5432/admin")).toBe(resolve("data", "master.key"));
    expect(defaultKeyFilePath("postgresql://localhost/admin")).toBe(resolve("data", "master.key"));
    expect(defaultKeyFilePath("./data/enterprise-admin.sqlite")).toBe(resolve("data", "master.key"));
  });

  it("ENTERPRISE_ADMIN_MASTER_KEY_FILE names the key file, created when missing", async () => {
    const path = join(dir, "keys", "custom.key");
    const provider = await loadLocalKeyProvider({ databaseUrl: join(dir, "admin.sqlite"), env: { ENTERPRISE_ADMIN_MASTER_KEY_FILE: path } });
    expect(provider.source).toEqual({ kind: "file", path });
    await stat(path);
    await expect(stat(join(dir, "master.key"))).rejects.toThrow();
  });

  it.skipIf(onWindows)("a key file readable by group or others is refused with a chmod 600 hint", async () => {
    await loadBesideDb();
    const path = join(dir, "master.key");
    await chmod(path, 0o640);
    await expect(loadBesideDb()).rejects.toThrow(`key file ${path} is accessible to group or others (mode 640); restrict it with: chmod 600 ${path}`);
    await chmod(path, 0o604);
    await expect(loadBesideDb()).rejects.toThrow("chmod 600");
  });

  it("a malformed key file is refused without quoting its content", async () => {
    const path = join(dir, "master.key");
    const leaked = randomBytes(32).toString("base64");
    await writeFile(path, `{"current":"a","keys":[{"id":"a","key":"${leaked}"`, { mode: 0o600 });
    const error = await loadBesideDb().catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe(`key file ${path} is not valid JSON`);

    await writeFile(path, JSON.stringify({ current: "a", keys: [{ id: "a", key: "c2hvcnQ=" }] }), { mode: 0o600 });
    await expect(loadBesideDb()).rejects.toThrow('master key "a" must be the base64 encoding of exactly 32 bytes (it decodes to 5 bytes)');
    await writeFile(path, JSON.stringify({ current: "b", keys: [{ id: "a", key: leaked }] }), { mode: 0o600 });
    const wrongCurrent = await loadBesideDb().catch((e: Error) => e);
    expect((wrongCurrent as Error).message).toContain('"current" names "b", which is not in "keys"');
    expect((wrongCurrent as Error).message).not.toContain(leaked);
  });

  it("two processes creating the key file at once end up with one key", async () => {
    const [a, b, c] = await Promise.all([loadBesideDb(), loadBesideDb(), loadBesideDb()]);
    expect(b.currentKeyId).toBe(a.currentKeyId);
    expect(c.currentKeyId).toBe(a.currentKeyId);
    const wrapped = await a.wrap(newDataKey(), context);
    await b.unwrap(wrapped, context);
  });
});

describe("the ENTERPRISE_ADMIN_MASTER_KEY variable", () => {
  it("wins over any key file; its id is env- and 12 hex of its sha256", async () => {
    const key = randomBytes(32);
    const provider = await loadLocalKeyProvider({
      databaseUrl: join(dir, "admin.sqlite"),
      env: { ENTERPRISE_ADMIN_MASTER_KEY: key.toString("base64"), ENTERPRISE_ADMIN_MASTER_KEY_FILE: join(dir, "named.key") },
    });
    expect(provider.source).toEqual({ kind: "env" });
    expect(provider.currentKeyId).toBe(envId(key));
    const dataKey = newDataKey();
    expect((await provider.unwrap(await provider.wrap(dataKey, context), context)).equals(dataKey)).toBe(true);
    expect(await readdir(dir)).toEqual([]);
  });

  it("a value that is not 32 bytes is refused, naming the variable and the length, never the value", async () => {
    const value = randomBytes(16).toString("base64");
    const error = await loadLocalKeyProvider({ databaseUrl: join(dir, "admin.sqlite"), env: { ENTERPRISE_ADMIN_MASTER_KEY: value } }).catch((e: Error) => e);
    expect((error as Error).message).toBe("ENTERPRISE_ADMIN_MASTER_KEY must be the base64 encoding of exactly 32 bytes (it decodes to 16 bytes)");
    expect((error as Error).message).not.toContain(value);

    const notBase64 = `${randomBytes(32).toString("hex")}!`;
    const error2 = await loadLocalKeyProvider({ databaseUrl: join(dir, "admin.sqlite"), env: { ENTERPRISE_ADMIN_MASTER_KEY: notBase64 } }).catch((e: Error) => e);
    expect((error2 as Error).message).toBe("ENTERPRISE_ADMIN_MASTER_KEY must be the base64 encoding of exactly 32 bytes (it is not valid base64)");
  });
});

describe("rotation", () => {
  it("begin keeps both keys on disk, finish drops the old one", async () => {
    const provider = await loadBesideDb();
    const oldId = provider.currentKeyId;
    const oldDataKey = newDataKey();
    const oldWrap = await provider.wrap(oldDataKey, context);

    const newId = await provider.beginRotation();
    expect(newId).not.toBe(oldId);
    expect(provider.currentKeyId).toBe(newId);
    expect(provider.keyIds()).toEqual([oldId, newId]);
    expect((await provider.unwrap(oldWrap, context)).equals(oldDataKey)).toBe(true);
    const newWrap = await provider.wrap(oldDataKey, context);
    expect(newWrap.masterKeyId).toBe(newId);

    // A crash here: a fresh load still holds both keys, the new one current.
    const afterCrash = await loadBesideDb();
    expect(afterCrash.keyIds()).toEqual([oldId, newId]);
    expect(afterCrash.currentKeyId).toBe(newId);
    expect((await afterCrash.unwrap(oldWrap, context)).equals(oldDataKey)).toBe(true);
    expect((await afterCrash.unwrap(newWrap, context)).equals(oldDataKey)).toBe(true);

    await provider.finishRotation();
    expect(provider.keyIds()).toEqual([newId]);
    await expect(provider.unwrap(oldWrap, context)).rejects.toBeInstanceOf(SecretDecryptionError);
    expect((await provider.unwrap(newWrap, context)).equals(oldDataKey)).toBe(true);

    const fresh = await loadBesideDb();
    expect(fresh.keyIds()).toEqual([newId]);
    expect(fresh.currentKeyId).toBe(newId);
    await expect(fresh.unwrap(oldWrap, context)).rejects.toBeInstanceOf(SecretDecryptionError);
    if (!onWindows) expect(await modeOf(join(dir, "master.key"))).toBe(0o600);
    expect((await readdir(dir)).filter((name) => name.endsWith(".tmp"))).toEqual([]);
  });

  it("a given new key is used as is, and a key already held is refused", async () => {
    const provider = await loadBesideDb();
    const key = randomBytes(32);
    const id = await provider.beginRotation(key);
    expect(id).toBe(`local-${envId(key).slice(4)}`);
    await expect(provider.beginRotation(key)).rejects.toThrow("already held");
    await expect(provider.beginRotation(Buffer.alloc(16))).rejects.toThrow("exactly 32 bytes");
  });

  it("from the variable, a new key must be passed and nothing is written", async () => {
    const oldKey = randomBytes(32);
    const provider = await loadLocalKeyProvider({ databaseUrl: join(dir, "admin.sqlite"), env: { ENTERPRISE_ADMIN_MASTER_KEY: oldKey.toString("base64") } });
    await expect(provider.beginRotation()).rejects.toThrow("--new-key");
    const oldWrap = await provider.wrap(newDataKey(), context);

    const newKey = randomBytes(32);
    const newId = await provider.beginRotation(newKey);
    expect(newId).toBe(envId(newKey));
    expect(provider.keyIds()).toEqual([envId(oldKey), newId]);
    await provider.unwrap(oldWrap, context);
    const newWrap = await provider.wrap(newDataKey(), context);
    await provider.finishRotation();
    await expect(provider.unwrap(oldWrap, context)).rejects.toBeInstanceOf(SecretDecryptionError);
    await provider.unwrap(newWrap, context);
    expect(await readdir(dir)).toEqual([]);
  });
});
