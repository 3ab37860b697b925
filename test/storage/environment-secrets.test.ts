// Secrets at rest (docs/api-rules.md): envelope encryption as the database sees it. (1) no secret value is in
// the database in clear, nor base64 or hex of it: the SQLite file and its WAL are scanned byte by byte,
// PostgreSQL through row texts and pg_dump; (2) a tampered or swapped ciphertext or wrapped data key is
// refused, never opened to wrong clear text; (3) rotating the master key re-wraps every data key, the
// old key leaves the key file and can no longer unwrap anything.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { SecretDecryptionError } from "../../src/domain/secret-crypto.js";
import { LocalKeyProvider, loadLocalKeyProvider } from "../../src/keys/local-key-provider.js";
import { EnvironmentConfigs } from "../../src/operations/environment-configs.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { keyRingStatus, verifyDataKeys } from "../../src/operations/inspect-master-keys.js";
import { rotateMasterKey } from "../../src/operations/rotate-master-key.js";
import { migrateToLatest, openDatabase, type Database } from "../../src/storage/database.js";
import { EnvironmentConfigRepository } from "../../src/storage/environment-config-repository.js";
import { createTestDatabase, dialects, type DialectName, type TestDatabase } from "../helpers/databases.js";
import { acme, globex } from "../helpers/fixtures.js";

const run = promisify(execFile);

interface KeyFileContent {
  current: string;
  keys: { id: string; key: string; created?: string }[];
}

/** The forms a leaked value could take in storage: UTF-8, base64 / base64url at every alignment, hex. */
function needles(value: string): { form: string; bytes: Buffer }[] {
  const raw = Buffer.from(value, "utf8");
  const out = [{ form: "utf8", bytes: raw }, { form: "utf16le", bytes: Buffer.from(value, "utf16le") }];
  for (const shift of [0, 1, 2]) {
    const shifted = Buffer.concat([Buffer.alloc(shift), raw]);
    for (const encoding of ["base64", "base64url"] as const) {
      // drop the characters that depend on the neighbouring bytes
      const text = shifted.toString(encoding).replace(/=+$/, "");
      out.push({ form: `${encoding}+${shift}`, bytes: Buffer.from(text.slice(4, text.length - 4), "latin1") });
    }
  }
  out.push({ form: "hex", bytes: Buffer.from(raw.toString("hex"), "latin1") });
  out.push({ form: "HEX", bytes: Buffer.from(raw.toString("hex").toUpperCase(), "latin1") });
  return out;
}

/** Every (value, form) of `values` found in `haystack`. */
function findLeaks(haystack: Buffer, values: readonly string[]): string[] {
  const found: string[] = [];
  for (const value of values) {
    for (const { form, bytes } of needles(value)) {
      if (haystack.includes(bytes)) found.push(`${form} of ${value.slice(0, 24)}…`);
    }
  }
  return found;
}

async function pgDumpAvailable(): Promise<boolean> {
  try {
    await run("pg_dump", ["--version"]);
    return true;
  } catch {
    return false;
  }
}

describe.each(dialects)("environment secrets at rest (%s)", (dialect: DialectName) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    while (cleanups.length > 0) await cleanups.pop()!().catch(() => {});
  });

  /** A fresh migrated database with acme and globex, a key file in its own temp dir, the operations. */
  async function setup() {
    const testDb: TestDatabase = await createTestDatabase(dialect);
    cleanups.push(() => testDb.drop());
    const database: Database = openDatabase(testDb.url);
    let open = true;
    const close = async () => {
      if (open) {
        open = false;
        await database.close();
      }
    };
    cleanups.push(close);
    await migrateToLatest(database);
    await importDirectory(database, acme);
    await importDirectory(database, globex);
    const keyDir = await mkdtemp(join(tmpdir(), "env-secrets-key-"));
    cleanups.push(() => rm(keyDir, { recursive: true, force: true }));
    const keyFile = join(keyDir, "master.key");
    const loadKeys = () => loadLocalKeyProvider({ databaseUrl: testDb.url, env: { ENTERPRISE_ADMIN_MASTER_KEY_FILE: keyFile } });
    const keys = await loadKeys();
    const repository = new EnvironmentConfigRepository(database);
    const configs = new EnvironmentConfigs(repository, keys);
    const readKeyFile = async () => JSON.parse(await readFile(keyFile, "utf8")) as KeyFileContent;
    return { testDb, database, close, keyFile, loadKeys, keys, repository, configs, readKeyFile };
  }

  const secretValue = (label: string) => `sk-live-UNIQUE-${label}-${randomBytes(8).toString("hex")}`;

  /** Three configurations in two enterprises, with updates that replace and remove secrets. */
  async function populate(configs: EnvironmentConfigs) {
    const everSent: string[] = []; // every secret value ever written, replaced and removed ones included
    const send = (label: string) => {
      const value = secretValue(label);
      everSent.push(value);
      return value;
    };
    const unicode = `pässwörd-ÜNÏQUÉ-秘密-${randomBytes(6).toString("hex")}`;
    everSent.push(unicode);
    const control = `plain-CONTROL-${randomBytes(8).toString("hex")}`; // an environment variable: stored in clear on purpose

    const a = await configs.create("acme", {
      name: "api", environmentVariables: { CONTROL: control },
      secrets: { OPENAI_API_KEY: send("openai"), DB_PASSWORD: send("db"), UNICODE: unicode, LONG: `${send("long")}${"L".repeat(2000)}` },
    });
    const b = await configs.create("acme", { name: "worker", secrets: { OPENAI_API_KEY: send("openai-b"), QUEUE_TOKEN: send("queue") } });
    const c = await configs.create("globex", { name: "api", secrets: { OPENAI_API_KEY: send("globex") } });
    await configs.update("acme", a.row.id, { secrets: { DB_PASSWORD: send("db-replaced") } });
    await configs.update("acme", b.row.id, { removeSecretKeys: ["QUEUE_TOKEN"], secrets: { NEW_TOKEN: send("new") } });
    return { ids: { a: a.row.id, b: b.row.id, c: c.row.id }, everSent, control };
  }

  // -------------------------------------------------------------------------------------------
  describe("no secret in clear in the database", () => {
    if (dialect === "sqlite") {
      it("the SQLite file and its WAL hold no secret value, in UTF-8, base64 or hex (an environment variable is found: the scan works)", async () => {
        const env = await setup();
        const { ids, everSent, control } = await populate(env.configs);
        const current = await env.configs.revealSecrets("acme", ids.a);
        expect(Object.keys(current).sort()).toStrictEqual(["DB_PASSWORD", "LONG", "OPENAI_API_KEY", "UNICODE"]);

        const folder = dirname(env.testDb.url);
        const scan = async () => {
          const files = (await readdir(folder)).filter((f) => f.startsWith("test.sqlite"));
          const contents = await Promise.all(files.map((f) => readFile(join(folder, f))));
          return { files, all: Buffer.concat(contents) };
        };

        // while open: the WAL holds the latest pages
        const whileOpen = await scan();
        expect(whileOpen.files).toContain("test.sqlite");
        expect(whileOpen.all.includes(Buffer.from(control))).toBe(true);
        expect(findLeaks(whileOpen.all, everSent)).toStrictEqual([]);

        // checkpointed into the main file, then closed
        await sql`PRAGMA wal_checkpoint(TRUNCATE)`.execute(env.database.db);
        await env.close();
        const closed = await scan();
        expect((await readFile(env.testDb.url)).includes(Buffer.from(control))).toBe(true);
        expect(findLeaks(closed.all, everSent)).toStrictEqual([]);
      });
    }

    if (dialect === "postgres") {
      it("no row of environment_config, environment_data_key or environment_secret holds a secret value as text", async () => {
        const env = await setup();
        const { everSent, control } = await populate(env.configs);
        let text = "";
        for (const table of ["environment_config", "environment_data_key", "environment_secret"]) {
          const rows = await sql<{ t: string }>`select t::text as t from ${sql.table(table)} t`.execute(env.database.db);
          expect(rows.rows.length).toBeGreaterThan(0);
          text += rows.rows.map((r) => r.t).join("\n");
        }
        // bytea as text is \x<hex>: the hex needle covers a clear value stored in a blob
        const haystack = Buffer.from(text, "utf8");
        expect(haystack.includes(Buffer.from(control))).toBe(true);
        expect(findLeaks(haystack, everSent)).toStrictEqual([]);
        // and the tables' bytea as escape text, where clear bytes would read as themselves
        const escaped = await sql<{ t: string }>`select encode(sealed_value, 'escape') as t from environment_secret`.execute(env.database.db);
        expect(findLeaks(Buffer.from(escaped.rows.map((r) => r.t).join("\n"), "utf8"), everSent)).toStrictEqual([]);
      });

      it("a pg_dump of the whole database holds no secret value", async (ctx) => {
        if (!(await pgDumpAvailable())) ctx.skip();
        const env = await setup();
        const { everSent, control } = await populate(env.configs);
        for (const format of ["plain", "custom"]) {
          const { stdout } = await run("pg_dump", ["--dbname", env.testDb.url, "--format", format, "--compress", "0"], { encoding: "buffer", maxBuffer: 256 * 1024 * 1024 });
          const dump = stdout as unknown as Buffer;
          expect(dump.includes(Buffer.from(control))).toBe(true);
          expect(findLeaks(dump, everSent)).toStrictEqual([]);
        }
      });
    }
  });

  // -------------------------------------------------------------------------------------------
  describe("tampering is refused", () => {
    async function tamperSetup() {
      const env = await setup();
      const secrets = {
        a: { K1: secretValue("a1"), K2: secretValue("a2") },
        b: { K1: secretValue("b1") },
      };
      const a = (await env.configs.create("acme", { name: "a", secrets: secrets.a })).row.id;
      const b = (await env.configs.create("acme", { name: "b", secrets: secrets.b })).row.id;
      const db = env.database.db;
      const sealed = async (id: string, key: string) =>
        (await db.selectFrom("environment_secret").select("sealed_value").where("environment_id", "=", id).where("key", "=", key).executeTakeFirstOrThrow()).sealed_value;
      const setSealed = (id: string, key: string, value: Buffer) =>
        db.updateTable("environment_secret").set({ sealed_value: value }).where("environment_id", "=", id).where("key", "=", key).execute();
      const wrapped = async (id: string) =>
        (await db.selectFrom("environment_data_key").select("wrapped_key").where("environment_id", "=", id).executeTakeFirstOrThrow()).wrapped_key;
      const setWrapped = (id: string, value: Buffer) =>
        db.updateTable("environment_data_key").set({ wrapped_key: value }).where("environment_id", "=", id).execute();
      /** revealSecrets must throw a SecretDecryptionError whose message holds no secret value. */
      const expectRefused = async (enterpriseId: string, id: string) => {
        const error = await env.configs.revealSecrets(enterpriseId, id).then(() => undefined, (e: unknown) => e);
        expect(error).toBeInstanceOf(SecretDecryptionError);
        const text = `${(error as Error).message}\n${(error as Error).stack}`;
        for (const value of [...Object.values(secrets.a), ...Object.values(secrets.b)]) expect(text).not.toContain(value);
      };
      return { env, secrets, a, b, sealed, setSealed, wrapped, setWrapped, expectRefused };
    }

    it("sanity: both configurations reveal their own secrets", async () => {
      const t = await tamperSetup();
      expect(await t.env.configs.revealSecrets("acme", t.a)).toStrictEqual(t.secrets.a);
      expect(await t.env.configs.revealSecrets("acme", t.b)).toStrictEqual(t.secrets.b);
    });

    it("a flipped byte anywhere in a sealed value (version, nonce, ciphertext, tag) is refused; restored, it opens again", async () => {
      const t = await tamperSetup();
      const original = await t.sealed(t.a, "K2");
      for (const index of [0, 1, 12, 13, 20, original.length - 17, original.length - 1]) {
        const flipped = Buffer.from(original);
        flipped[index] = flipped[index]! ^ 0x01;
        await t.setSealed(t.a, "K2", flipped);
        await t.expectRefused("acme", t.a);
      }
      // truncated and emptied
      await t.setSealed(t.a, "K2", original.subarray(0, original.length - 1));
      await t.expectRefused("acme", t.a);
      await t.setSealed(t.a, "K2", Buffer.alloc(0));
      await t.expectRefused("acme", t.a);
      await t.setSealed(t.a, "K2", original);
      expect(await t.env.configs.revealSecrets("acme", t.a)).toStrictEqual(t.secrets.a);
    });

    it("two keys of one configuration with their ciphertexts swapped are refused", async () => {
      const t = await tamperSetup();
      const k1 = await t.sealed(t.a, "K1");
      const k2 = await t.sealed(t.a, "K2");
      await t.setSealed(t.a, "K1", k2);
      await t.setSealed(t.a, "K2", k1);
      await t.expectRefused("acme", t.a);
    });

    it("one key's ciphertext swapped between two configurations is refused in both", async () => {
      const t = await tamperSetup();
      const fromA = await t.sealed(t.a, "K1");
      const fromB = await t.sealed(t.b, "K1");
      await t.setSealed(t.a, "K1", fromB);
      await t.setSealed(t.b, "K1", fromA);
      await t.expectRefused("acme", t.a);
      await t.expectRefused("acme", t.b);
    });

    it("a ciphertext copied to another configuration of another enterprise is refused", async () => {
      const t = await tamperSetup();
      const c = (await t.env.configs.create("globex", { name: "c", secrets: { K1: secretValue("c1") } })).row.id;
      await t.setSealed(c, "K1", await t.sealed(t.a, "K1"));
      await t.expectRefused("globex", c);
    });

    it("wrapped data keys swapped between configurations, or with a flipped byte, are refused", async () => {
      const t = await tamperSetup();
      const wa = await t.wrapped(t.a);
      const wb = await t.wrapped(t.b);
      await t.setWrapped(t.a, wb);
      await t.setWrapped(t.b, wa);
      await t.expectRefused("acme", t.a);
      await t.expectRefused("acme", t.b);
      const flipped = Buffer.from(wa);
      flipped[20] = flipped[20]! ^ 0x80;
      await t.setWrapped(t.a, flipped);
      await t.expectRefused("acme", t.a);
      await t.setWrapped(t.a, wa);
      expect(await t.env.configs.revealSecrets("acme", t.a)).toStrictEqual(t.secrets.a);
    });

    it("a data key relabelled with an unknown master key id is refused", async () => {
      const t = await tamperSetup();
      await t.env.database.db.updateTable("environment_data_key").set({ master_key_id: "local-000000000000" }).where("environment_id", "=", t.a).execute();
      await t.expectRefused("acme", t.a);
    });
  });

  // -------------------------------------------------------------------------------------------
  describe("master key rotation (rotateMasterKey: enterprise-admin keys rotate)", () => {
    it("re-wraps every data key; every secret reveals with a provider loaded fresh from the key file; a key the rotation added is gone once retired, and unwraps nothing", async () => {
      const env = await setup();
      const expected = new Map<string, { enterpriseId: string; secrets: Record<string, string> }>();
      for (const [enterpriseId, name] of [["acme", "one"], ["acme", "two"], ["globex", "one"], ["globex", "empty"]] as const) {
        const secrets: Record<string, string> = name === "empty" ? {} : { API_KEY: secretValue(`${enterpriseId}-${name}`), OTHER: secretValue("other") };
        const view = await env.configs.create(enterpriseId, { name, secrets });
        expected.set(view.row.id, { enterpriseId, secrets });
      }
      const before = await env.readKeyFile();
      expect(before.keys).toHaveLength(1);
      const oldId = before.current;
      const oldKey = Buffer.from(before.keys[0]!.key, "base64");
      const dataKeysBefore = await env.repository.allDataKeys();
      const sealedBefore = await env.database.db.selectFrom("environment_secret").selectAll().orderBy("environment_id").orderBy("key").execute();

      // The first rotation keeps the key file's starting key (a database sharing the file may use it);
      // the second removes the key the first added, to the retired file.
      const first = await rotateMasterKey(env.repository, env.keys);
      expect(first).toMatchObject({ rewrapped_data_keys: 4, removed_master_key_ids: [] });
      expect(first.master_key_id).not.toBe(oldId);
      const firstKey = (await env.readKeyFile()).keys.find((k) => k.id === first.master_key_id)!.key;
      const dataKeysBetween = await env.repository.allDataKeys();
      const summary = await rotateMasterKey(env.repository, env.keys);
      expect(summary.rewrapped_data_keys).toBe(4);
      expect(await env.repository.currentMasterKey()).toBe(summary.master_key_id);
      expect(summary.removed_master_key_ids).toStrictEqual([first.master_key_id]);

      // the key file: the starting key (still its "current") and the new key, still 0600, the removed key's bytes nowhere in it
      const after = await env.readKeyFile();
      expect(after.current).toBe(oldId);
      expect(after.keys.map((k) => k.id)).toStrictEqual([oldId, summary.master_key_id]);
      const fileText = await readFile(env.keyFile, "utf8");
      expect(fileText).not.toContain(firstKey);
      expect(fileText).not.toContain(first.master_key_id);
      if (process.platform !== "win32") expect((await stat(env.keyFile)).mode & 0o777).toBe(0o600);
      // the removed key is in the retired file (0600), for backups from before the rotation
      const retiredText = await readFile(`${env.keyFile}.retired`, "utf8");
      expect(retiredText).toContain(firstKey);
      if (process.platform !== "win32") expect((await stat(`${env.keyFile}.retired`)).mode & 0o777).toBe(0o600);

      // every data key re-wrapped under the new id; the sealed secrets themselves are unchanged
      const dataKeysAfter = await env.repository.allDataKeys();
      expect(dataKeysAfter.map((k) => k.environment_id)).toStrictEqual(dataKeysBefore.map((k) => k.environment_id));
      for (const [i, row] of dataKeysAfter.entries()) {
        expect(row.master_key_id).toBe(summary.master_key_id);
        expect(Buffer.compare(row.wrapped_key, dataKeysBefore[i]!.wrapped_key)).not.toBe(0);
        expect(Buffer.compare(row.wrapped_key, dataKeysBetween[i]!.wrapped_key)).not.toBe(0);
      }
      expect(await env.database.db.selectFrom("environment_secret").selectAll().orderBy("environment_id").orderBy("key").execute()).toStrictEqual(sealedBefore);

      // a provider loaded fresh from the key file reveals everything
      const fresh = new EnvironmentConfigs(new EnvironmentConfigRepository(env.database), await env.loadKeys());
      for (const [id, { enterpriseId, secrets }] of expected) expect(await fresh.revealSecrets(enterpriseId, id)).toStrictEqual(secrets);

      // a provider holding only a retired key can no longer unwrap, under its own id or relabelled as the new one
      const otherDir = await mkdtemp(join(tmpdir(), "env-secrets-old-"));
      cleanups.push(() => rm(otherDir, { recursive: true, force: true }));
      for (const id of [oldId, first.master_key_id, summary.master_key_id]) {
        const oldOnly = new LocalKeyProvider({ kind: "file", path: join(otherDir, "old.key") }, [{ id, key: oldKey }], id);
        const stale = new EnvironmentConfigs(new EnvironmentConfigRepository(env.database), oldOnly);
        for (const [configId, { enterpriseId }] of expected) {
          await expect(stale.revealSecrets(enterpriseId, configId)).rejects.toBeInstanceOf(SecretDecryptionError);
        }
      }
      expect(existsSync(join(otherDir, "old.key"))).toBe(false);

      // configurations created after the rotation work with the rotated provider and a fresh one
      const later = await env.configs.create("acme", { name: "later", secrets: { K: "after-rotation" } });
      expect(await env.configs.revealSecrets("acme", later.row.id)).toStrictEqual({ K: "after-rotation" });
      expect(await fresh.revealSecrets("acme", later.row.id)).toStrictEqual({ K: "after-rotation" });
    });

    it("a new store's key ring is empty until the first write: the key file's current key is current, and the first configuration records it", async () => {
      const env = await setup();
      expect(await env.repository.currentMasterKey()).toBeUndefined();
      expect(await keyRingStatus(env.repository, env.keys)).toMatchObject({ current_master_key_id: env.keys.initialKeyId, keys: [{ id: env.keys.initialKeyId, state: "current", held: true, data_keys: 0 }] });
      expect(await verifyDataKeys(env.repository, env.keys)).toMatchObject({ ok: true, data_keys: 0, unwrapped: 0 });

      const first = (await env.configs.create("acme", { name: "first", secrets: { K: "first-value" } })).row.id;
      expect(await env.repository.currentMasterKey()).toBe(env.keys.initialKeyId);
      expect(await keyRingStatus(env.repository, env.keys)).toMatchObject({ keys: [{ id: env.keys.initialKeyId, state: "current", held: true, data_keys: 1 }] });
      await env.configs.update("acme", first, { secrets: { L: "added" } });
      const summary = await rotateMasterKey(env.repository, env.keys);
      expect(summary.rewrapped_data_keys).toBe(1);
      const fresh = new EnvironmentConfigs(env.repository, await env.loadKeys());
      expect(await fresh.revealSecrets("acme", first)).toStrictEqual({ K: "first-value", L: "added" });
    });

    it("rotates twice in a row; the secrets survive both", async () => {
      const env = await setup();
      const secrets = { API_KEY: secretValue("twice") };
      const id = (await env.configs.create("acme", { name: "twice", secrets })).row.id;
      const first = await rotateMasterKey(env.repository, env.keys);
      const second = await rotateMasterKey(env.repository, env.keys);
      expect(second.master_key_id).not.toBe(first.master_key_id);
      expect(second.rewrapped_data_keys).toBe(1);
      expect(second.removed_master_key_ids).toStrictEqual([first.master_key_id]);
      expect((await env.readKeyFile()).keys.map((k) => k.id).sort()).toStrictEqual([env.keys.initialKeyId, second.master_key_id].sort());
      const fresh = new EnvironmentConfigs(new EnvironmentConfigRepository(env.database), await env.loadKeys());
      expect(await fresh.revealSecrets("acme", id)).toStrictEqual(secrets);
    });

    it("a data key that cannot be unwrapped stops the rotation before any change", async () => {
      const env = await setup();
      const secrets = { API_KEY: secretValue("ok") };
      const good = (await env.configs.create("acme", { name: "good", secrets })).row.id;
      const bad = (await env.configs.create("acme", { name: "bad", secrets: { X: secretValue("bad") } })).row.id;
      const db = env.database.db;
      const wrapped = (await db.selectFrom("environment_data_key").select("wrapped_key").where("environment_id", "=", bad).executeTakeFirstOrThrow()).wrapped_key;
      const flipped = Buffer.from(wrapped);
      flipped[20] = flipped[20]! ^ 0x01;
      await db.updateTable("environment_data_key").set({ wrapped_key: flipped }).where("environment_id", "=", bad).execute();
      const fileBefore = await readFile(env.keyFile, "utf8");
      const keysBefore = await env.repository.allDataKeys();

      await expect(rotateMasterKey(env.repository, env.keys)).rejects.toBeInstanceOf(SecretDecryptionError);
      expect(await readFile(env.keyFile, "utf8")).toBe(fileBefore);
      expect(await env.repository.allDataKeys()).toStrictEqual(keysBefore);
      const fresh = new EnvironmentConfigs(new EnvironmentConfigRepository({ db }), await env.loadKeys());
      expect(await fresh.revealSecrets("acme", good)).toStrictEqual(secrets);
    });

    it("with the master key from ENTERPRISE_ADMIN_MASTER_KEY: a new key is required, then a provider of the new key reveals everything", async () => {
      const env = await setup();
      const oldKey = randomBytes(32);
      const fromEnv = (key: Buffer) => loadLocalKeyProvider({ databaseUrl: env.testDb.url, env: { ENTERPRISE_ADMIN_MASTER_KEY: key.toString("base64") } });
      const keys = await fromEnv(oldKey);
      const configs = new EnvironmentConfigs(env.repository, keys);
      const secrets = { API_KEY: secretValue("env") };
      const id = (await configs.create("acme", { name: "from-env", secrets })).row.id;

      await expect(rotateMasterKey(env.repository, keys)).rejects.toThrow(/--new-key/);
      expect(await configs.revealSecrets("acme", id)).toStrictEqual(secrets);

      const newKey = randomBytes(32);
      const summary = await rotateMasterKey(env.repository, keys, { newKey });
      expect(summary.rewrapped_data_keys).toBe(1);
      // the same key again (as after a rotation cut short): it resumes, finding nothing left to re-wrap
      expect(await rotateMasterKey(env.repository, keys, { newKey })).toStrictEqual({ ...summary, rewrapped_data_keys: 0 });
      expect(await new EnvironmentConfigs(env.repository, await fromEnv(newKey)).revealSecrets("acme", id)).toStrictEqual(secrets);
      await expect(new EnvironmentConfigs(env.repository, await fromEnv(oldKey)).revealSecrets("acme", id)).rejects.toBeInstanceOf(SecretDecryptionError);
    });
  });
});
