// End to end: master key rotation (`keys rotate`, the CLI) while one or two real servers serve on the
// same database and key file. Whatever the servers write before, between and after rotations, every
// data key still unwraps (`keys verify`), a later rotation succeeds, and the secrets open.
import { randomBytes } from "node:crypto";
import { execFile, execFileSync } from "node:child_process";
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Writable } from "node:stream";
import { promisify } from "node:util";
import SqliteDatabase from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { loadServeConfig } from "../../src/config.js";
import { createLogger } from "../../src/interceptors/logging.js";
import { loadLocalKeyProvider } from "../../src/keys/local-key-provider.js";
import { startService } from "../../src/main.js";
import { EnvironmentConfigs } from "../../src/operations/environment-configs.js";
import { rotateMasterKey, type RotationStep } from "../../src/operations/rotate-master-key.js";
import { EnvironmentConfigRepository } from "../../src/storage/environment-config-repository.js";
import { cli as runCli, cliProcess } from "../helpers/cli.js";
import { dialects, type DialectName } from "../helpers/databases.js";
import { startTestService } from "../helpers/service.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { migrateToLatest, openDatabase } from "../../src/storage/database.js";
import { createTestDatabase } from "../helpers/databases.js";
import { acme } from "../helpers/fixtures.js";

const run = promisify(execFile);
const hasStrace = () => {
  try {
    execFileSync("strace", ["-V"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
};
/** The real CLI's entry, for the strace test (the others run the CLI through test/helpers/cli.ts). */
const bin = new URL("../../bin/enterprise-admin.mjs", import.meta.url).pathname;
// Each test runs several rotations and verifications beside one or two servers.
const CLI_TEST_TIMEOUT_MS = 120_000;

describe.each(dialects)("master key rotation while servers run (%s)", (dialect: DialectName) => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    while (cleanups.length > 0) await cleanups.pop()!().catch(() => {});
  });

  /**
   * A server on a fresh database whose key file sits in a temp folder of this test alone; with
   * `masterKeys`, its keys come from ENTERPRISE_ADMIN_MASTER_KEY instead.
   */
  async function setup(masterKeys = "") {
    const keyDir = await mkdtemp(join(tmpdir(), "key-rotation-"));
    cleanups.push(() => rm(keyDir, { recursive: true, force: true }));
    const keyFile = join(keyDir, "master.key");
    /** A server's or the CLI's master keys: the key file, or the keys in ENTERPRISE_ADMIN_MASTER_KEY. */
    const keyEnv = (keys: string) => ({ ENTERPRISE_ADMIN_MASTER_KEY_FILE: keyFile, ENTERPRISE_ADMIN_MASTER_KEY: keys });
    const svc = await startTestService(dialect, keyEnv(masterKeys));
    cleanups.push(() => svc.close());
    const token = await svc.token();

    /** The CLI (in this process), on this database and key file (or the keys of ENTERPRISE_ADMIN_MASTER_KEY in `masterKeys`). */
    const cliWith = (masterKeys: string, ...args: string[]) =>
      runCli([...args, "--db", svc.databaseUrl], keyEnv(masterKeys));
    const cli = (...args: string[]) => cliWith(masterKeys, ...args);
    /**
     * The CLI as a process of its own, for a rotation while the servers write: in this process the
     * CLI's SQLite busy wait would stall the servers it waits for.
     */
    const cliAlone = (...args: string[]) =>
      cliProcess([...args, "--db", svc.databaseUrl], keyEnv(masterKeys));
    const expectCli = async (...args: string[]) => {
      const result = await cli(...args);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      return JSON.parse(result.stdout);
    };

    /** A second server on the same database and key file (or these keys in ENTERPRISE_ADMIN_MASTER_KEY); its log lines go to `logs`. */
    const startSecondServer = async (secondMasterKeys = masterKeys, logs: Array<Record<string, unknown>> = []) => {
      const destination = new Writable({ write(chunk, _encoding, done) {
        for (const line of String(chunk).split("\n")) if (line) logs.push(JSON.parse(line));
        done();
      } });
      const second = await startService(loadServeConfig({ port: "0", host: "127.0.0.1", db: svc.databaseUrl }, {}),
        createLogger({ level: "info", destination }), keyEnv(secondMasterKeys));
      cleanups.push(() => second.close());
      return `http://127.0.0.1:${second.port}`;
    };

    const expected = new Map<string, Record<string, string>>(); // config id -> every secret it should hold
    const call = async (baseUrl: string, method: string, path: string, body: unknown) => {
      const res = await fetch(baseUrl + path, {
        method, body: JSON.stringify(body), headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      });
      return { status: res.status, retryAfter: res.headers.get("retry-after"), json: (await res.json()) as { code: number; message: string; request_id: string; data: any } };
    };
    const send = async (baseUrl: string, method: string, path: string, body: unknown) => {
      const { status, json } = await call(baseUrl, method, path, body);
      expect({ status, code: json.code, message: json.message }).toStrictEqual({ status: 200, code: 0, message: "success" });
      return json.data;
    };
    const secret = () => `sk-${randomBytes(12).toString("hex")}`;
    const create = async (baseUrl: string, name: string) => {
      const secrets = { API_KEY: secret() };
      const data = await send(baseUrl, "POST", "/api/v1/environment_configs", { name, secrets });
      expected.set(data.id, secrets);
      return data.id as string;
    };
    /** A PATCH that adds a secret and keeps the others: it opens the stored data key. */
    const addSecret = async (baseUrl: string, id: string) => {
      const key = `K_${randomBytes(4).toString("hex").toUpperCase()}`;
      const value = secret();
      const data = await send(baseUrl, "PATCH", `/api/v1/environment_configs/${id}`, { secrets: { [key]: value } });
      expected.get(id)![key] = value;
      expect(data.secret_keys).toStrictEqual(Object.keys(expected.get(id)!).sort());
    };
    /** Every secret ever set still opens, with the key file as it is now. */
    const expectSecretsOpen = async (withKeys = masterKeys) => {
      const keys = await loadLocalKeyProvider({ databaseUrl: svc.databaseUrl, env: keyEnv(withKeys) });
      const configs = new EnvironmentConfigs(new EnvironmentConfigRepository(svc.database), keys);
      for (const [id, secrets] of expected) expect(await configs.revealSecrets("acme", id)).toStrictEqual(secrets);
    };
    const expectVerified = async () => {
      const report = await expectCli("keys", "verify");
      expect(report).toMatchObject({ ok: true, data_keys: expected.size, unwrapped: expected.size, unreadable: [] });
    };
    return { svc, keyFile, cli, cliAlone, cliWith, expectCli, startSecondServer, call, create, addSecret, expectSecretsOpen, expectVerified, expected };
  }

  it("keys rotate while a server runs: the server's later creates and updates stay readable, and a second rotation succeeds", async () => {
    const t = await setup();
    const server = t.svc.baseUrl;
    const before = await t.create(server, "before");

    const first = await t.expectCli("keys", "rotate");
    expect(first.rewrapped_data_keys).toBe(1);

    const after = await t.create(server, "after");
    await t.addSecret(server, before);
    await t.addSecret(server, after);
    await t.expectVerified();

    const second = await t.expectCli("keys", "rotate");
    expect(second.master_key_id).not.toBe(first.master_key_id);
    expect(second.rewrapped_data_keys).toBe(2);
    expect(second.removed_master_key_ids).toStrictEqual([first.master_key_id]);

    await t.addSecret(server, before);
    await t.addSecret(server, after);
    await t.create(server, "after-second");
    await t.expectVerified();
    await t.expectSecretsOpen();
  }, CLI_TEST_TIMEOUT_MS);

  it("two servers on one database and key file, rotations between their writes: every data key still unwraps", async () => {
    const t = await setup();
    const one = t.svc.baseUrl;
    const two = await t.startSecondServer();

    const a = await t.create(one, "a");
    await t.expectCli("keys", "rotate");
    const b = await t.create(two, "b");
    await t.addSecret(two, a);
    await t.addSecret(one, b);
    await t.expectCli("keys", "rotate");
    const c = await t.create(one, "c");
    await t.addSecret(two, c);
    await t.addSecret(one, a);
    await t.expectVerified();
    await t.expectCli("keys", "rotate");
    await t.expectVerified();
    await t.expectSecretsOpen();
  }, CLI_TEST_TIMEOUT_MS);

  it("creates and updates on two servers during a rotation: none is wrapped under a key the rotation removes", async () => {
    const t = await setup();
    const servers = [t.svc.baseUrl, await t.startSecondServer()];
    // Each server updates configurations of its own (two servers updating one would race for its etag).
    const seeded = [[] as string[], [] as string[]];
    for (let i = 0; i < 4; i++) seeded[i % 2]!.push(await t.create(servers[i % 2]!, `seed-${i}`));
    // Writes keep going on both servers until the rotation has finished (bounded: at most 40 each).
    let rotating = true;
    const writer = async (index: number) => {
      for (let i = 0; rotating && i < 40; i++) {
        await t.create(servers[index]!, `during-${index}-${i}`);
        await t.addSecret(servers[index]!, seeded[index]![i % 2]!);
      }
    };
    // Settled before the rotation's outcome is checked, so a writer's failure is reported, not left unhandled.
    const writers = Promise.all([writer(0), writer(1)]).then(() => undefined, (error: unknown) => error);
    const rotation = await t.cliAlone("keys", "rotate");
    rotating = false;
    const writerFailure = await writers;
    if (writerFailure) throw writerFailure;
    expect(rotation.stderr).toBe("");
    expect(rotation.code).toBe(0);
    await t.expectVerified();
    await t.expectCli("keys", "rotate");
    await t.expectVerified();
    await t.expectSecretsOpen();
  }, CLI_TEST_TIMEOUT_MS);

  it("a crash between any two rotation steps loses nothing: the server goes on, keys verify passes, keys rotate finishes", async () => {
    const t = await setup();
    const server = t.svc.baseUrl;
    for (let i = 0; i < 5; i++) await t.create(server, `config-${i}`);
    const repository = new EnvironmentConfigRepository(t.svc.database);
    for (const step of ["key-added", "key-made-current", "batch-rewrapped", "all-rewrapped"] as const) {
      const keys = await loadLocalKeyProvider({ databaseUrl: t.svc.databaseUrl, env: { ENTERPRISE_ADMIN_MASTER_KEY_FILE: t.keyFile } });
      const crash = new Error(`crash after ${step}`);
      const afterStep = (reached: RotationStep) => {
        if (reached === step) throw crash;
      };
      await expect(rotateMasterKey(repository, keys, { batchSize: 2, afterStep })).rejects.toBe(crash);

      const id = await t.create(server, `after-${step}`);
      await t.addSecret(server, id);
      await t.addSecret(server, [...t.expected.keys()][0]!);
      await t.expectVerified();
    }
    const finished = await t.expectCli("keys", "rotate");
    expect(finished.rewrapped_data_keys).toBe(t.expected.size);
    const status = await t.expectCli("keys", "status");
    // every key the crashed rotations added is gone; the key file's starting key stays (retired, unneeded)
    const startingKey = JSON.parse(await readFile(t.keyFile, "utf8")).current;
    expect(status.keys).toStrictEqual([
      { id: finished.master_key_id, state: "current", held: true, data_keys: t.expected.size },
      { id: startingKey, state: "retired", held: true, data_keys: 0 },
    ]);
    await t.expectVerified();
    await t.expectSecretsOpen();
  }, CLI_TEST_TIMEOUT_MS);

  it("a key file that a serving process cannot read (damaged, or open to others) refuses secrets with 503 as a missing key does, and serves them again once mended", async () => {
    const t = await setup();
    const first = await t.create(t.svc.baseUrl, "first");
    const saved = await readFile(t.keyFile, "utf8");
    const keyText = (JSON.parse(saved) as { keys: Array<{ key: string }> }).keys[0]!.key;
    const damages = [
      { damage: () => writeFile(t.keyFile, saved.slice(0, 40), { mode: 0o600 }), logged: "is not valid JSON" },
      { damage: () => writeFile(t.keyFile, saved.replace(keyText, `${keyText[0] === "A" ? "B" : "A"}${keyText.slice(1)}`), { mode: 0o600 }), logged: "the key was changed or damaged" },
      { damage: () => chmod(t.keyFile, 0o644), logged: "is accessible to group or others (mode 644)" },
      { damage: async () => { await rm(t.keyFile); await mkdir(t.keyFile); }, logged: `key file ${t.keyFile} is not a file` },
    ];
    for (const [i, { damage, logged }] of damages.entries()) {
      await damage();
      const created = await t.call(t.svc.baseUrl, "POST", "/api/v1/environment_configs", { name: `refused-${i}`, secrets: { K: "v" } });
      expect({ status: created.status, code: created.json.code, retryAfter: created.retryAfter, message: created.json.message }).toStrictEqual({
        status: 503, code: 5030, retryAfter: "10", message: "secrets: the master key they need is not available to this server; retry later" });
      const line = t.svc.logs.map((text) => JSON.parse(text) as Record<string, unknown>).find((entry) => entry.request_id === created.json.request_id);
      expect(line, logged).toMatchObject({ level: 40, code: 5030, msg: "secrets refused: master key not available to this server", reason: expect.stringContaining(logged) });
      expect(t.svc.logs.join("\n")).not.toContain(keyText.slice(1));
      await rm(t.keyFile, { recursive: true });
      await writeFile(t.keyFile, saved, { mode: 0o600 });
      await t.create(t.svc.baseUrl, `mended-${i}`);
    }
    await t.addSecret(t.svc.baseUrl, first);
    await t.expectVerified();
    await t.expectSecretsOpen();
  }, CLI_TEST_TIMEOUT_MS);

  it("keys from ENTERPRISE_ADMIN_MASTER_KEY: after a rotation, a server without the new key refuses secrets with 503; one given both keys goes on", async () => {
    const [oldKey, newKey] = [randomBytes(32).toString("base64"), randomBytes(32).toString("base64")];
    const t = await setup(oldKey);
    const oldOnly = t.svc.baseUrl;
    const both = await t.startSecondServer(`${newKey},${oldKey}`);
    const before = await t.create(oldOnly, "before");

    const rotation = await t.cliWith(oldKey, "keys", "rotate", "--new-key", newKey);
    expect(rotation.code).toBe(0);
    const summary = JSON.parse(rotation.stdout);
    expect(summary).toMatchObject({ rewrapped_data_keys: 1, removed_master_key_ids: [] });
    expect(rotation.stderr).toContain("every instance needs the new key in ENTERPRISE_ADMIN_MASTER_KEY");

    for (const [method, path, body] of [
      ["POST", "/api/v1/environment_configs", { name: "refused", secrets: { K: "v" } }],
      ["PATCH", `/api/v1/environment_configs/${before}`, { secrets: { K: "v" } }],
    ] as const) {
      const reply = await t.call(oldOnly, method, path, body);
      expect({ status: reply.status, code: reply.json.code, retryAfter: reply.retryAfter }).toStrictEqual({ status: 503, code: 5030, retryAfter: "10" });
      // the caller is not told the key's id; the call's own log line (its request id) names it
      expect(reply.json.message).toBe("secrets: the master key they need is not available to this server; retry later");
      const logged = t.svc.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.request_id === reply.json.request_id);
      expect(logged).toStrictEqual([expect.objectContaining({ level: 40, status: 503, code: 5030, master_key_id: summary.master_key_id,
        msg: "secrets refused: master key not available to this server" })]);
    }
    await t.create(both, "after");
    await t.addSecret(both, before);
    // Restarted without the new key, a server says so as it starts; with it, it says nothing of keys.
    for (const [held, keys] of [["the old key", oldKey], ["both keys", `${newKey},${oldKey}`]] as const) {
      const logs: Array<Record<string, unknown>> = [];
      await t.startSecondServer(keys, logs);
      expect(logs.filter((line) => line.level !== 30), held).toStrictEqual(keys === oldKey ? [expect.objectContaining({ level: 40,
        master_key_id: summary.master_key_id, key_source: "ENTERPRISE_ADMIN_MASTER_KEY",
        msg: "the master key of this database's secrets is not in this server's key source: creating configurations and writing secrets get 503 until it is" })] : []);
    }

    const stale = await t.cliWith(oldKey, "keys", "verify");
    expect(stale.code).toBe(1);
    expect(JSON.parse(stale.stdout)).toMatchObject({ ok: false, current_master_key_held: false, data_keys: 2, unwrapped: 0 });
    expect(stale.stderr).toContain('environment config "before"');
    expect(stale.stderr).toContain('environment config "after"');
    for (const keys of [newKey, `${newKey},${oldKey}`]) {
      const verified = await t.cliWith(keys, "keys", "verify");
      expect({ code: verified.code, stderr: verified.stderr }).toStrictEqual({ code: 0, stderr: "" });
    }
    const status = JSON.parse((await t.cliWith(`${newKey},${oldKey}`, "keys", "status")).stdout);
    expect(status.keys.map((k: { state: string; data_keys: number }) => [k.state, k.data_keys])).toStrictEqual([["current", 2], ["retired", 0]]);
    await t.expectSecretsOpen(newKey);
  }, CLI_TEST_TIMEOUT_MS);

  it("two databases sharing one key file (as the defaults allow): rotations of each, side by side, never remove a key the other needs", async () => {
    const t = await setup();
    const other = await createTestDatabase(dialect);
    cleanups.push(() => other.drop());
    const otherDb = openDatabase(other.url);
    cleanups.push(() => otherDb.close());
    await migrateToLatest(otherDb);
    await importDirectory(otherDb, acme);
    const otherKeys = await loadLocalKeyProvider({ databaseUrl: other.url, env: { ENTERPRISE_ADMIN_MASTER_KEY_FILE: t.keyFile } });
    const otherConfigs = new EnvironmentConfigs(new EnvironmentConfigRepository(otherDb), otherKeys);
    const otherSecrets = { API_KEY: `sk-${randomBytes(8).toString("hex")}` };
    const otherId = (await otherConfigs.create("acme", { name: "other", secrets: otherSecrets })).row.id;
    const otherEnv = { ENTERPRISE_ADMIN_MASTER_KEY: "", ENTERPRISE_ADMIN_MASTER_KEY_FILE: t.keyFile };
    // The other database's rotations run in a process of their own: the key file's lock is taken across processes.
    const otherCli = (...args: string[]) => cliProcess([...args, "--db", other.url], otherEnv);

    await t.create(t.svc.baseUrl, "mine");
    for (let round = 0; round < 2; round++) {
      // Both rotations at once: each adds its key to the one file, under its lock.
      const [mine, theirs] = await Promise.all([t.cli("keys", "rotate"), otherCli("keys", "rotate")]);
      expect({ code: mine.code, stderr: mine.stderr }).toStrictEqual({ code: 0, stderr: "" });
      expect({ code: theirs.code, stderr: theirs.stderr }).toStrictEqual({ code: 0, stderr: "" });
      await t.create(t.svc.baseUrl, `mine-${round}`);
      await otherConfigs.update("acme", otherId, { secrets: { [`K${round}`]: "v" } });
      Object.assign(otherSecrets, { [`K${round}`]: "v" });
    }
    await t.expectVerified();
    expect(JSON.parse((await runCli(["keys", "verify", "--db", other.url], otherEnv)).stdout)).toMatchObject({ ok: true, data_keys: 1, unwrapped: 1 });
    await t.expectSecretsOpen();
    const fresh = new EnvironmentConfigs(new EnvironmentConfigRepository(otherDb), await loadLocalKeyProvider({ databaseUrl: other.url, env: { ENTERPRISE_ADMIN_MASTER_KEY_FILE: t.keyFile } }));
    expect(await fresh.revealSecrets("acme", otherId)).toStrictEqual(otherSecrets);
  }, CLI_TEST_TIMEOUT_MS);

  it("keys from ENTERPRISE_ADMIN_MASTER_KEY: a rotation cut short after a batch resumes in a fresh CLI with the old key and --new-key-file NEW; --new-key must be strict base64", async () => {
    const [oldKey, newKey] = [randomBytes(32).toString("base64"), randomBytes(32).toString("base64")];
    const t = await setup(oldKey);
    for (let i = 0; i < 3; i++) await t.create(t.svc.baseUrl, `config-${i}`);
    const crash = new Error("crash after a batch");
    const keys = await loadLocalKeyProvider({ databaseUrl: t.svc.databaseUrl, env: { ENTERPRISE_ADMIN_MASTER_KEY: oldKey } });
    await expect(rotateMasterKey(new EnvironmentConfigRepository(t.svc.database), keys, {
      newKey: Buffer.from(newKey, "base64"), batchSize: 1, afterStep: (step) => { if (step === "batch-rewrapped") throw crash; },
    })).rejects.toBe(crash);

    const resumed = await t.cliWith(oldKey, "keys", "rotate", "--new-key", newKey);
    expect({ code: resumed.code, stderr: resumed.stderr }).toMatchObject({ code: 0, stderr: expect.stringContaining("every instance needs the new key") });
    expect(JSON.parse(resumed.stdout)).toMatchObject({ rewrapped_data_keys: 2, removed_master_key_ids: [] });
    const verified = await t.cliWith(newKey, "keys", "verify");
    expect({ code: verified.code, stderr: verified.stderr }).toStrictEqual({ code: 0, stderr: "" });
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true, data_keys: 3, unwrapped: 3 });

    // Buffer.from(…, "base64") would take these; the strict decoder refuses them without quoting them.
    for (const bad of [`${newKey.slice(0, -2)}!!`, `${newKey} trailing`]) {
      const refused = await t.cliWith(oldKey, "keys", "rotate", "--new-key", bad);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toBe("error: --new-key must be the base64 encoding of exactly 32 bytes (it is not valid base64)\n");
    }
    // The file form, which keeps the key out of the process list and shell history.
    const thirdKey = randomBytes(32).toString("base64");
    const keyDir = await mkdtemp(join(tmpdir(), "key-rotation-new-"));
    cleanups.push(() => rm(keyDir, { recursive: true, force: true }));
    const newKeyFile = join(keyDir, "new.key");
    await writeFile(newKeyFile, `${thirdKey}\n`, { mode: 0o600 });
    expect((await t.cliWith(`${newKey},${oldKey}`, "keys", "rotate", "--new-key-file", newKeyFile)).code).toBe(0);
    expect(JSON.parse((await t.cliWith(thirdKey, "keys", "verify")).stdout)).toMatchObject({ ok: true, data_keys: 3, unwrapped: 3 });
    await t.expectSecretsOpen(thirdKey);
  }, CLI_TEST_TIMEOUT_MS);

  it.skipIf(dialect !== "sqlite")("SQLite restore after rotations: `keys merge` adds the backup's keys to the live key file, which keeps the later ones; copying the backup's key file over it lost them", async () => {
    const t = await setup();
    await t.create(t.svc.baseUrl, "before-backup");
    // A rotation first: the key file's first key is its "current" and never leaves it.
    await t.expectCli("keys", "rotate");
    // The backup, as operations.md takes it: SQLite's online backup and a copy of the key file.
    const backupDir = await mkdtemp(join(tmpdir(), "key-backup-"));
    cleanups.push(() => rm(backupDir, { recursive: true, force: true }));
    const backupDb = join(backupDir, "enterprise-admin.sqlite");
    const live = new SqliteDatabase(t.svc.databaseUrl, { readonly: true });
    await live.backup(backupDb);
    live.close();
    await copyFile(t.keyFile, join(backupDir, "master.key"));
    await t.create(t.svc.baseUrl, "after-backup");
    await t.expectCli("keys", "rotate"); // the backup's key leaves the key file for master.key.retired
    const onBackup = (...args: string[]) => runCli([...args, "--db", backupDb], { ENTERPRISE_ADMIN_MASTER_KEY_FILE: t.keyFile });
    const unmerged = await onBackup("keys", "verify");
    expect(unmerged.code).toBe(1);
    // The key is in the live key file's .retired, and verify says how to bring it back.
    expect(unmerged.stderr).toContain(`it is in ${t.keyFile}.retired: \`enterprise-admin keys merge ${t.keyFile}.retired\` adds it back`);
    const merged = await onBackup("keys", "merge", join(backupDir, "master.key"));
    expect([merged.code, merged.stderr, JSON.parse(merged.stdout).added]).toStrictEqual([0, "", [expect.stringMatching(/^local-[0-9a-f]{12}$/)]]);
    const restored = await onBackup("keys", "verify");
    expect([restored.code, JSON.parse(restored.stdout)]).toStrictEqual([0, expect.objectContaining({ ok: true, data_keys: 1, unwrapped: 1 })]);
    // The live database, whose keys came from the rotations after the backup, still opens every secret; a merge again adds nothing.
    await t.expectVerified();
    await t.expectSecretsOpen();
    expect(JSON.parse((await onBackup("keys", "merge", join(backupDir, "master.key"))).stdout)).toStrictEqual({ added: [] });
    const missing = await onBackup("keys", "merge", join(backupDir, "nothing.key"));
    expect([missing.code, missing.stderr]).toStrictEqual([1, `error: ${join(backupDir, "nothing.key")}: no such key file\n`]);
    // On a machine without a key file, the error says to copy the backup's instead.
    const noKeyFile = join(backupDir, "absent", "master.key");
    const backupCurrent = JSON.parse((await onBackup("keys", "status")).stdout).current_master_key_id as string;
    const unmergeable = await runCli(["keys", "merge", join(backupDir, "master.key"), "--db", backupDb], { ENTERPRISE_ADMIN_MASTER_KEY_FILE: noKeyFile });
    expect([unmergeable.code, unmergeable.stderr]).toStrictEqual([1, `error: key file ${noKeyFile} does not exist, and this database's secrets are under master key ` +
      `"${backupCurrent}", which a new key file would not open: restore the key file from a backup, or set ENTERPRISE_ADMIN_MASTER_KEY_FILE ` +
      `(or ENTERPRISE_ADMIN_MASTER_KEY) as the servers have it, or, on a machine without a key file, copy ${join(backupDir, "master.key")} to ${noKeyFile} (mode 0600) instead of merging\n`]);
  }, CLI_TEST_TIMEOUT_MS);

  it.skipIf(dialect !== "sqlite" || !hasStrace())("SQLite: the database's commits are synced to disk before the key file loses a key (strace of the real CLI)", async () => {
    const t = await setup();
    for (let i = 0; i < 3; i++) await t.create(t.svc.baseUrl, `config-${i}`);
    await t.expectCli("keys", "rotate");
    const trace = join(dirname(t.keyFile), "strace.txt");
    const env = { ...process.env, DATABASE_URL: "", ENTERPRISE_ADMIN_MASTER_KEY: "", ENTERPRISE_ADMIN_MASTER_KEY_FILE: t.keyFile };
    const { stdout } = await run("strace", ["-f", "--seccomp-bpf", "-y", "-qq", "-o", trace, "-e", "trace=fsync,fdatasync,rename,renameat,renameat2,write,pwrite64,pwritev", process.execPath, bin, "keys", "rotate", "--db", t.svc.databaseUrl], { env });
    expect(JSON.parse(stdout).removed_master_key_ids).toHaveLength(1);
    const lines = (await readFile(trace, "utf8")).split("\n");
    const ontoKeyFile = lines.flatMap((line, i) => (/rename.*, "[^"]*\/master\.key"/.test(line) ? [i] : []));
    expect(ontoKeyFile.length).toBeGreaterThanOrEqual(1);
    const removal = ontoKeyFile[ontoKeyFile.length - 1]!;
    // Whatever was last written to the log before the removal (the re-wraps, the removal's own
    // commit) is synced before the removal's rename (SQLite syncs a restarted log's header anyway,
    // so only a sync after the last write counts).
    const onWal = (pattern: RegExp) => lines.flatMap((line, i) => (i < removal && pattern.test(line) ? [i] : []));
    const lastWalWrite = Math.max(...onWal(/^\d+ +p?writev?(64)?\(\d+<[^>]*\.sqlite-wal>/));
    expect(lastWalWrite).toBeGreaterThan(0);
    expect(onWal(/^\d+ +f(data)?sync\(\d+<[^>]*\.sqlite-wal>/).filter((i) => i > lastWalWrite)).not.toHaveLength(0);
    await t.expectVerified();
  }, CLI_TEST_TIMEOUT_MS);
});
