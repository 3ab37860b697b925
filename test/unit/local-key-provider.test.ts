import { createHash, randomBytes } from "node:crypto";
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { newDataKey, SecretDecryptionError } from "../../src/domain/secret-crypto.js";
import { MasterKeyNotHeldError } from "../../src/keys/key-provider.js";
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
    const wrapped = await provider.wrap(dataKey, context, provider.initialKeyId);
    expect(wrapped.masterKeyId).toBe(provider.initialKeyId);
    expect(wrapped.wrapped).toHaveLength(1 + 12 + 32 + 16);
    expect((await provider.unwrap(wrapped, context)).equals(dataKey)).toBe(true);
  });

  it("unwrapping under another environment or enterprise is refused", async () => {
    const provider = await loadBesideDb();
    const wrapped = await provider.wrap(newDataKey(), context, provider.initialKeyId);
    await expect(provider.unwrap(wrapped, { ...context, environmentId: "env-2" })).rejects.toBeInstanceOf(SecretDecryptionError);
    await expect(provider.unwrap(wrapped, { ...context, enterpriseId: "ent-2" })).rejects.toBeInstanceOf(SecretDecryptionError);
  });

  it("an unknown master key id and a tampered wrap are refused", async () => {
    const provider = await loadBesideDb();
    const wrapped = await provider.wrap(newDataKey(), context, provider.initialKeyId);
    await expect(provider.unwrap({ ...wrapped, masterKeyId: "local-000000000000" }, context)).rejects.toThrow(SecretDecryptionError);
    await expect(provider.unwrap({ ...wrapped, masterKeyId: "local-000000000000" }, context)).rejects.toThrow('master key "local-000000000000" is not held');
    const tampered = Buffer.from(wrapped.wrapped);
    tampered[20]! ^= 0x80;
    await expect(provider.unwrap({ ...wrapped, wrapped: tampered }, context)).rejects.toBeInstanceOf(SecretDecryptionError);
  });

  it("a wrap relabelled with another held master key's id is refused", async () => {
    const provider = await loadBesideDb();
    const wrapped = await provider.wrap(newDataKey(), context, provider.initialKeyId);
    const newId = await provider.addKey(randomBytes(32));
    await expect(provider.unwrap({ ...wrapped, masterKeyId: newId }, context)).rejects.toBeInstanceOf(SecretDecryptionError);
  });

  it("wrapping under a master key that is not held is refused (MasterKeyNotHeldError), never done under another key", async () => {
    const provider = await loadBesideDb();
    const error = await provider.wrap(newDataKey(), context, "local-000000000000").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MasterKeyNotHeldError);
    expect((error as MasterKeyNotHeldError).masterKeyId).toBe("local-000000000000");
    expect((error as Error).message).toContain('master key "local-000000000000" is current in the database but not held');
  });
});

describe("the key file", () => {
  it("is created beside the SQLite database with mode 0600 and reused on the next load", async () => {
    const first = await loadBesideDb();
    const path = join(dir, "master.key");
    expect(first.source).toEqual({ kind: "file", path });
    if (!onWindows) expect(await modeOf(path)).toBe(0o600);
    const file = JSON.parse(await readFile(path, "utf8"));
    expect(file.current).toBe(first.initialKeyId);
    expect(file.keys).toHaveLength(1);
    expect(file.keys[0]).toMatchObject({ id: first.initialKeyId, created: expect.any(String) });
    expect(Buffer.from(file.keys[0].key, "base64")).toHaveLength(32);

    const wrapped = await first.wrap(newDataKey(), context, first.initialKeyId);
    const second = await loadBesideDb();
    expect(second.initialKeyId).toBe(first.initialKeyId);
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
    expect(b.initialKeyId).toBe(a.initialKeyId);
    expect(c.initialKeyId).toBe(a.initialKeyId);
    const wrapped = await a.wrap(newDataKey(), context, a.initialKeyId);
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
    expect(provider.initialKeyId).toBe(envId(key));
    const dataKey = newDataKey();
    expect((await provider.unwrap(await provider.wrap(dataKey, context, provider.initialKeyId), context)).equals(dataKey)).toBe(true);
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

describe("the ENTERPRISE_ADMIN_MASTER_KEY variable with several keys", () => {
  it("holds every key of a comma-separated list; the first is the one a new store starts with", async () => {
    const [newer, older] = [randomBytes(32), randomBytes(32)];
    const single = await loadLocalKeyProvider({ databaseUrl: join(dir, "admin.sqlite"), env: { ENTERPRISE_ADMIN_MASTER_KEY: older.toString("base64") } });
    const oldWrap = await single.wrap(newDataKey(), context, envId(older));
    const both = await loadLocalKeyProvider({ databaseUrl: join(dir, "admin.sqlite"), env: { ENTERPRISE_ADMIN_MASTER_KEY: `${newer.toString("base64")},${older.toString("base64")}` } });
    expect(both.initialKeyId).toBe(envId(newer));
    expect(await both.keyIds()).toEqual([envId(newer), envId(older)]);
    await both.unwrap(oldWrap, context);
    await both.wrap(newDataKey(), context, envId(newer));
  });

  it("a bad key in the list is refused, naming its position, never its value", async () => {
    const value = randomBytes(16).toString("base64");
    const error = await loadLocalKeyProvider({ databaseUrl: join(dir, "admin.sqlite"), env: { ENTERPRISE_ADMIN_MASTER_KEY: `${randomBytes(32).toString("base64")},${value}` } }).catch((e: Error) => e);
    expect((error as Error).message).toBe("ENTERPRISE_ADMIN_MASTER_KEY (key 2 of 2) must be the base64 encoding of exactly 32 bytes (it decodes to 16 bytes)");
  });
});

describe("rotation steps on the key ring", () => {
  it("addKey keeps every key on disk and the file's starting key its current; removeKeys moves the named keys to the retired file", async () => {
    const provider = await loadBesideDb();
    const oldId = provider.initialKeyId;
    const dataKey = newDataKey();
    const oldWrap = await provider.wrap(dataKey, context, oldId);

    const secondId = await provider.addKey(randomBytes(32));
    const newId = await provider.addKey(randomBytes(32));
    expect(provider.initialKeyId).toBe(oldId);
    expect(await provider.keyIds()).toEqual([oldId, secondId, newId]);
    const secondWrap = await provider.wrap(dataKey, context, secondId);

    // A crash here: a fresh load holds every key; the file's current is still the starting key.
    const afterCrash = await loadBesideDb();
    expect(await afterCrash.keyIds()).toEqual([oldId, secondId, newId]);
    expect(afterCrash.initialKeyId).toBe(oldId);
    expect((await afterCrash.unwrap(secondWrap, context)).equals(dataKey)).toBe(true);

    // The starting key is never removed, even when named; the others go to master.key.retired.
    expect(await provider.removeKeys(new Set([oldId, secondId]))).toEqual([secondId]);
    expect(await provider.removeKeys(new Set([secondId]))).toEqual([]);
    const fresh = await loadBesideDb();
    expect(await fresh.keyIds()).toEqual([oldId, newId]);
    await expect(fresh.unwrap(secondWrap, context)).rejects.toBeInstanceOf(SecretDecryptionError);
    expect((await fresh.unwrap(oldWrap, context)).equals(dataKey)).toBe(true);
    const retired = await loadLocalKeyProvider({ databaseUrl: "x.sqlite", env: { ENTERPRISE_ADMIN_MASTER_KEY_FILE: join(dir, "master.key.retired") }, create: false });
    expect((await retired.unwrap(secondWrap, context)).equals(dataKey)).toBe(true);
    if (!onWindows) {
      expect(await modeOf(join(dir, "master.key"))).toBe(0o600);
      expect(await modeOf(join(dir, "master.key.retired"))).toBe(0o600);
    }
    expect((await readdir(dir)).filter((name) => name.endsWith(".tmp") || name.endsWith(".lock"))).toEqual([]);
  });

  it("a key gone from the key file on disk does not wrap, though held in memory: MasterKeyNotHeldError; back in the file, it wraps again", async () => {
    const provider = await loadBesideDb();
    const newId = await provider.addKey(randomBytes(32));
    await provider.wrap(newDataKey(), context, newId);
    const saved = await readFile(join(dir, "master.key"), "utf8");
    const file = JSON.parse(saved) as { current: string; keys: { id: string }[] };
    await writeFile(join(dir, "master.key"), JSON.stringify({ current: file.current, keys: file.keys.filter((k) => k.id !== newId) }), { mode: 0o600 });
    const error = await provider.wrap(newDataKey(), context, newId).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MasterKeyNotHeldError);
    expect((error as Error).message).toContain(`master key "${newId}" is current in the database but no longer in key file`);
    await writeFile(join(dir, "master.key"), saved, { mode: 0o600 });
    await provider.wrap(newDataKey(), context, newId);
  });

  it("two rotations adding keys to one key file at once lose neither key (the lock file serialises them)", async () => {
    await loadBesideDb();
    const providers = await Promise.all(Array.from({ length: 8 }, () => loadBesideDb()));
    const ids = await Promise.all(providers.map((p) => p.addKey(randomBytes(32))));
    const fresh = await loadBesideDb();
    for (const id of ids) expect(await fresh.keyIds()).toContain(id);
    expect(await readdir(dir)).not.toContain("master.key.lock");
  });

  it("a lock file left by a process that is gone is broken; one held by a live process is waited for", async () => {
    const provider = await loadBesideDb();
    const lock = join(dir, "master.key.lock");
    await writeFile(lock, JSON.stringify({ host: hostname(), pid: 2 ** 22 + 12345, token: "dead" }), { mode: 0o600 });
    const id = await provider.addKey(randomBytes(32));
    expect(await (await loadBesideDb()).keyIds()).toContain(id);
    await writeFile(lock, JSON.stringify({ host: hostname(), pid: process.pid, token: "live" }), { mode: 0o600 });
    let added = false;
    const adding = provider.addKey(randomBytes(32)).then(() => { added = true; });
    await new Promise((r) => setTimeout(r, 200));
    expect(added).toBe(false);
    await rm(lock);
    await adding;
    expect(added).toBe(true);
  });

  it("a provider loaded before a rotation finds the new key in the file when asked for it, and never forgets a key it read", async () => {
    const server = await loadBesideDb();
    const rotation = await loadBesideDb();
    const firstId = await rotation.addKey(randomBytes(32));
    const firstWrap = await server.wrap(newDataKey(), context, firstId); // not held at load: read from the file again
    const newId = await rotation.addKey(randomBytes(32));
    const dataKey = newDataKey();
    const newWrap = await server.wrap(dataKey, context, newId);
    expect((await rotation.unwrap(newWrap, context)).equals(dataKey)).toBe(true);
    await rotation.removeKeys(new Set([firstId]));
    await server.unwrap(firstWrap, context);
  });

  it("a given new key is used as is; its id does not depend on the process", async () => {
    const provider = await loadBesideDb();
    const key = randomBytes(32);
    const id = await provider.addKey(key);
    expect(id).toBe(`local-${envId(key).slice(4)}`);
    expect(provider.keyIdFor(key)).toBe(id);
    expect(await provider.addKey(key)).toBe(id);
    expect(await provider.keyIds()).toHaveLength(2);
    await expect(provider.addKey(Buffer.alloc(16))).rejects.toThrow("exactly 32 bytes");
  });

  it("from the variable, the new key is only held and nothing is written", async () => {
    const oldKey = randomBytes(32);
    const provider = await loadLocalKeyProvider({ databaseUrl: join(dir, "admin.sqlite"), env: { ENTERPRISE_ADMIN_MASTER_KEY: oldKey.toString("base64") } });
    const oldWrap = await provider.wrap(newDataKey(), context, envId(oldKey));

    const newKey = randomBytes(32);
    const newId = await provider.addKey(newKey);
    expect(newId).toBe(envId(newKey));
    expect(await provider.keyIds()).toEqual([envId(oldKey), newId]);
    await provider.unwrap(oldWrap, context);
    await provider.wrap(newDataKey(), context, newId);
    expect(await provider.removeKeys(new Set([envId(oldKey)]))).toEqual([]);
    await provider.unwrap(oldWrap, context);
    expect(await readdir(dir)).toEqual([]);
  });
});
