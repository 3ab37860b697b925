// End to end: a busy store (another writer holds the write lock past STORE_BUSY_TIMEOUT_MS) and a
// full disk (SQLite on a small tmpfs) are 503 unavailable with Retry-After for the caller, never 500;
// the log says what and where; nothing acknowledged is lost, and writes resume by themselves.
import { execFileSync, spawn } from "node:child_process";
import { closeSync, fstatSync, mkdtempSync, openSync, rmSync, truncateSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadServeConfig } from "../../src/config.js";
import { createLogger } from "../../src/interceptors/logging.js";
import { startService, type RunningService } from "../../src/main.js";
import { AccessAdmin } from "../../src/operations/access-admin.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { AuthRepository } from "../../src/storage/auth-repository.js";
import { migrateToLatest, openDatabase, type Database } from "../../src/storage/database.js";
import { DirectoryRepository } from "../../src/storage/directory-repository.js";
import { isStoreError } from "../../src/storage/store-faults.js";
import { dialects, type DialectName } from "../helpers/databases.js";
import { acme } from "../helpers/fixtures.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { holdWriteLock as holdStoreWriteLock } from "../helpers/write-lock.js";

const CLI = fileURLToPath(new URL("../../bin/enterprise-admin.mjs", import.meta.url));
const RECORD = "/openapi/v1/usage/events/batch-record";

function events(prefix: string, count: number) {
  return Array.from({ length: count }, (_, i) => ({
    event_id: `${prefix}-${i}`, user_id: "7001", model_name: "model-a", model_type: "Chat", model_source: "Builtin",
    timestamp: 1_735_689_600 + i, input_tokens: 1000 + i, output_tokens: 7, basic_amount: "0.012345", pay_go_amount: "0",
  }));
}

async function record(baseUrl: string, token: string, batch: unknown[]) {
  const reply = await fetch(`${baseUrl}${RECORD}`, {
    method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ events: batch }),
  });
  return { status: reply.status, retryAfter: reply.headers.get("retry-after"), body: (await reply.json()) as { code: number; message: string; data: { recorded: number } | null } };
}

/** The number of events of `enterpriseId` stored, and the sum of their input tokens. */
async function storedEvents(database: Database) {
  const row = await database.db.selectFrom("usage_event").select((eb) => [eb.fn.countAll<number | string>().as("n"), sql<string>`cast(sum(input_tokens) as text)`.as("tokens")])
    .where("enterprise_id", "=", "acme").executeTakeFirstOrThrow();
  return { count: Number(row.n), tokens: row.tokens ?? "0" };
}

describe.each(dialects)("a busy store on %s", (dialect: DialectName) => {
  let svc: TestService;

  beforeAll(async () => {
    svc = await startTestService(dialect, { STORE_BUSY_TIMEOUT_MS: "300" });
  });
  afterAll(async () => {
    await svc?.close();
  });

  const holdWriteLock = () => holdStoreWriteLock(dialect, svc.databaseUrl);

  it("a write that waits past the busy timeout gets 503 with Retry-After, then 200 once the lock is free", async () => {
    const token = await svc.token(["usage:write"]);
    const release = await holdWriteLock();
    const started = performance.now();
    let reply;
    try {
      reply = await record(svc.baseUrl, token, events("busy", 10));
    } finally {
      await release();
    }
    const waited = performance.now() - started;
    expect(reply.status).toBe(503);
    expect(reply.retryAfter).toBe("1");
    expect(reply.body).toMatchObject({ code: 5030, message: "the store is busy; retry later", data: null });
    expect(waited).toBeGreaterThanOrEqual(290);
    expect(waited).toBeLessThan(3000);
    const logged = svc.logs.map((line) => JSON.parse(line)).find((line) => line.path === RECORD && line.status === 503);
    expect(logged).toMatchObject({ level: 40, code: 5030, store_fault: expect.stringContaining("database busy") });
    expect(JSON.stringify(logged)).not.toContain("stack");

    const retried = await record(svc.baseUrl, token, events("busy", 10));
    expect(retried).toMatchObject({ status: 200, body: { code: 0, data: { recorded: 10 } } });
    expect(await storedEvents(svc.database)).toMatchObject({ count: 10 });
  }, 60_000);

  it("config writes and token exchanges wait for a held write lock without stalling the server, then succeed", async () => {
    // A busy timeout well above the hold, so that a wait that blocked the server's thread (SQLite's
    // own busy wait) would show as a read stalled for seconds.
    const server = await startTestService(dialect, { STORE_BUSY_TIMEOUT_MS: "3000" });
    try {
      await writesWaitForTheLock(server);
    } finally {
      await server.close();
    }
  }, 60_000);

  async function writesWaitForTheLock(server: TestService) {
    const token = await server.token();
    const app = await server.access.createApp("acme", ["departments:read"], "during-lock");
    const call = async (method: string, path: string, body?: unknown, bearer: string | undefined = token) => {
      const reply = await fetch(server.baseUrl + path, {
        method, body: body === undefined ? undefined : JSON.stringify(body),
        headers: { ...(bearer ? { authorization: `Bearer ${bearer}` } : {}), "content-type": "application/json" },
      });
      return { status: reply.status, json: (await reply.json()) as { code: number; message: string; data: any } };
    };
    const created = await call("POST", "/api/v1/environment_configs", { name: "held-lock", secrets: { API_KEY: "sk-1" } });
    const doomed = await call("POST", "/api/v1/environment_configs", { name: "held-lock-doomed" });
    expect([created.status, doomed.status]).toStrictEqual([200, 200]);

    // Each write below must wait for the lock (no 503 at once, no failed upgrade of a transaction
    // that read first) while the server answers others meanwhile.
    const release = await holdStoreWriteLock(dialect, server.databaseUrl);
    const released = new Promise<void>((resolve) => setTimeout(() => void release().then(resolve), 500));
    const writes = Promise.all([
      call("PATCH", `/api/v1/environment_configs/${created.json.data.id}`, { secrets: { SECOND: "sk-2" } }),
      call("POST", "/api/v1/environment_configs", { name: "held-lock-2" }),
      call("DELETE", `/api/v1/environment_configs/${doomed.json.data.id}`),
      call("POST", "/openapi/v1/auth/token", { app_id: app.app_id, app_secret: app.app_secret }, undefined),
    ]);
    const readStarted = performance.now();
    const read = await call("GET", "/api/v1/environment_configs?page_size=10");
    const readMs = performance.now() - readStarted;
    await released;
    const [patched, second, deleted, exchanged] = await writes;

    expect(read.status).toBe(200);
    expect(readMs).toBeLessThan(400);
    expect({ status: patched.status, code: patched.json.code, keys: patched.json.data?.secret_keys })
      .toStrictEqual({ status: 200, code: 0, keys: ["API_KEY", "SECOND"] });
    expect({ status: second.status, code: second.json.code }).toStrictEqual({ status: 200, code: 0 });
    expect({ status: deleted.status, code: deleted.json.code }).toStrictEqual({ status: 200, code: 0 });
    expect({ status: exchanged.status, code: exchanged.json.code }).toStrictEqual({ status: 200, code: 0 });
    expect((await call("GET", `/api/v1/environment_configs/${doomed.json.data.id}`)).status).toBe(404);
  }
});

describe.runIf(dialects.includes("postgres"))("a lock held on the usage tables (PostgreSQL)", () => {
  let svc: TestService;

  beforeAll(async () => {
    svc = await startTestService("postgres", { STORE_BUSY_TIMEOUT_MS: "300" });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it("usage queries waiting on it get 503 at the busy timeout and give their connections back: other calls go on", async () => {
    const token = await svc.token(["statistics:read", "departments:read"]);
    const post = async (path: string, body: unknown, timeoutMs = 4000) => {
      const started = performance.now();
      const reply = await fetch(svc.baseUrl + path, {
        method: "POST", body: JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs),
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "connect-timeout-ms": "2000" },
      }).catch((error: Error) => ({ status: error.name, retry: null, headers: new Headers() }));
      return { status: reply.status, retryAfter: reply.headers.get("retry-after"), ms: performance.now() - started };
    };
    const locker = new pg.Client({ connectionString: svc.databaseUrl });
    await locker.connect();
    await locker.query("begin");
    // As an operator's maintenance would: every statement that reads these tables waits for it.
    await locker.query("lock table usage_event, usage_running_total in access exclusive mode");
    try {
      // More calls than the pool has connections (10).
      const usage = await Promise.all(Array.from({ length: 12 }, () =>
        post("/openapi/v1/statistics/user-model-usage", { start_time: 1_735_689_600, end_time: 1_735_689_600 + 86_400 + 3_600, user_ids: ["7001"] })));
      expect(usage.map((reply) => [reply.status, reply.retryAfter])).toStrictEqual(usage.map(() => [503, "1"]));
      const departments = await post("/openapi/v1/departments/batch-get", { department_ids: ["100"] }, 3000);
      expect(departments.status).toBe(200);
      expect(departments.ms).toBeLessThan(1500);
    } finally {
      await locker.query("rollback");
      await locker.end();
    }
  }, 60_000);
});

describe.runIf(dialects.includes("postgres"))("STORE_BUSY_TIMEOUT_MS=0 on PostgreSQL", () => {
  it("a write that finds the ingestion lock held is 503 at once, as on SQLite, not after the lock is released", async () => {
    const svc = await startTestService("postgres", { STORE_BUSY_TIMEOUT_MS: "0" });
    const release = await holdStoreWriteLock("postgres", svc.databaseUrl);
    try {
      const token = await svc.token(["usage:write"]);
      const started = performance.now();
      const reply = await record(svc.baseUrl, token, events("busy-zero", 2));
      expect([reply.status, reply.body.code]).toStrictEqual([503, 5030]);
      expect(performance.now() - started).toBeLessThan(3_000);
    } finally {
      await release();
      await svc.close();
    }
  }, 30_000);
});

describe.runIf(dialects.includes("postgres"))("PostgreSQL ending the server's connections while calls use them", () => {
  let svc: TestService;

  beforeAll(async () => {
    svc = await startTestService("postgres", { STORE_BUSY_TIMEOUT_MS: "20000" });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it("a read and a write whose connections are terminated fail alone, 503 with Retry-After (a restart passes), and the server serves on", async () => {
    const token = await svc.token(["statistics:read", "departments:read", "usage:write"]);
    const post = async (path: string, body: unknown) => {
      const reply = await fetch(svc.baseUrl + path, { method: "POST", body: JSON.stringify(body), headers: { authorization: `Bearer ${token}`, "content-type": "application/json" } });
      const { code, message } = (await reply.json()) as { code: number; message: string };
      return { status: reply.status, code, ...(reply.status === 200 ? {} : { message, retryAfter: reply.headers.get("retry-after") }) };
    };
    const usage = { start_time: 1_735_689_600, end_time: 1_735_689_600 + 86_400, user_ids: ["7001"] };
    const admin = new pg.Client({ connectionString: svc.databaseUrl });
    await admin.connect();
    const locker = new pg.Client({ connectionString: svc.databaseUrl });
    await locker.connect();
    const timedOutWaits = async () => /^enterprise_admin_store_lock_waits_total\{outcome="timeout"\} (\d+)$/m.exec(await (await fetch(`${svc.baseUrl}/metrics`)).text())?.[1] ?? "0";
    const timedOutBefore = await timedOutWaits();
    const release = await holdStoreWriteLock("postgres", svc.databaseUrl);
    try {
      // A read waits on a table lock, a write on the ingestion lock, each on a connection the server has checked out.
      await locker.query("begin");
      await locker.query("lock table usage_event, usage_running_total in access exclusive mode");
      const read = post("/openapi/v1/statistics/user-model-usage", usage);
      const write = post(RECORD, { events: events("terminated", 2) });
      let waiting: number[] = [];
      for (let tries = 0; tries < 200 && waiting.length < 2; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 25));
        waiting = (await admin.query<{ pid: number }>(`select pid from pg_stat_activity where datname = current_database() and wait_event_type in ('Lock', 'Advisory')
          and pid not in ($1, $2) and query not like '%pg_advisory_lock(72001)%'`, [(locker as unknown as { processID: number }).processID, (admin as unknown as { processID: number }).processID])).rows.map((r) => r.pid);
      }
      expect(waiting).toHaveLength(2);
      // Named, so that an operator can tell the server's connections from the CLI's ("enterprise-admin").
      expect((await admin.query("select distinct application_name from pg_stat_activity where pid = any($1::int[])", [waiting])).rows)
        .toStrictEqual([{ application_name: "enterprise-admin serve" }]);
      await admin.query("select pg_terminate_backend(pid) from unnest($1::int[]) as pid", [waiting]);
      const refused = { status: 503, code: 5030, message: "the store cannot be reached; retry later", retryAfter: "1" };
      expect(await Promise.all([read, write])).toStrictEqual([refused, refused]);
      // The write's wait for the ingestion lock ended with its connection, not at the busy timeout.
      expect(await timedOutWaits()).toBe(timedOutBefore);
    } finally {
      await locker.query("rollback");
      await locker.end();
      await release();
      await admin.end();
    }
    expect(await post("/openapi/v1/statistics/user-model-usage", usage)).toStrictEqual({ status: 200, code: 0 });
    expect(await post(RECORD, { events: events("after", 2) })).toStrictEqual({ status: 200, code: 0 });
    expect(await post("/openapi/v1/departments/batch-get", { department_ids: ["100"] })).toStrictEqual({ status: 200, code: 0 });
  }, 60_000);

  it("/readyz is 503 while PostgreSQL refuses the server's connections and 200 again once it takes them; /healthz stays 200 (liveness)", async () => {
    const answer = async (path: string) => {
      const reply = await fetch(svc.baseUrl + path);
      return [reply.status, await reply.json()];
    };
    expect(await answer("/readyz")).toStrictEqual([200, { status: "ready" }]);
    const url = new URL(svc.databaseUrl);
    const name = url.pathname.slice(1);
    url.pathname = "/postgres";
    const admin = new pg.Client({ connectionString: url.toString() });
    await admin.connect();
    try {
      await admin.query(`alter database "${name}" allow_connections false`);
      await admin.query("select pg_terminate_backend(pid) from pg_stat_activity where datname = $1", [name]);
      await expect.poll(() => answer("/readyz"), { timeout: 10_000, interval: 100 }).toStrictEqual([503, { status: "store unreachable" }]);
      expect(await answer("/healthz")).toStrictEqual([200, { status: "ok" }]);
    } finally {
      await admin.query(`alter database "${name}" allow_connections true`);
      await admin.end();
    }
    expect(await answer("/readyz")).toStrictEqual([200, { status: "ready" }]);
  }, 30_000);

  it("every error of a connection ended under its queries is a store error (store_errors_total), pg's own codeless ones too", async () => {
    const client = new pg.Client({ connectionString: svc.databaseUrl });
    client.on("error", () => {});
    await client.connect();
    const admin = new pg.Client({ connectionString: svc.databaseUrl });
    await admin.connect();
    try {
      const running = client.query("select pg_sleep(30)").then(() => undefined, (error: unknown) => error);
      await expect.poll(async () => (await admin.query("select 1 from pg_stat_activity where pid = $1 and state = 'active'",
        [(client as unknown as { processID: number }).processID])).rowCount).toBe(1);
      await admin.query("select pg_terminate_backend($1)", [(client as unknown as { processID: number }).processID]);
      const errors = [await running, await client.query("select 1").then(() => undefined, (error: unknown) => error)];
      // The second is pg's "Client has encountered a connection error and is not queryable" (or "Connection terminated …"), without a code.
      expect(errors.map((error) => error instanceof Error)).toStrictEqual([true, true]);
      expect(errors.map((error) => isStoreError(error)), errors.map((error) => (error as Error).message).join(" / ")).toStrictEqual([true, true]);
    } finally {
      await client.end().catch(() => {});
      await admin.end();
    }
  });
});

/** Appends to `path` until the disk is full (a MiB at a time, then what is left); its size then. */
function fillUp(path: string): number {
  const fd = openSync(path, "a");
  const block = Buffer.alloc(1 << 20);
  try {
    for (let length = block.length; length > 0;) {
      try {
        writeSync(fd, block, 0, length);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
        length >>= 1;
      }
    }
    return fstatSync(fd).size;
  } finally {
    closeSync(fd);
  }
}

describe.runIf(dialects.includes("sqlite"))("a full disk under SQLite", () => {
  const dir = mkdtempSync(join(tmpdir(), "eadmin-full-"));
  const dbPath = join(dir, "store.sqlite");
  const ballast = join(dir, "ballast");
  let mounted = false;
  let database: Database | undefined;
  let service: RunningService | undefined;
  const logs: string[] = [];

  beforeAll(async () => {
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=24m", "tmpfs", dir], { stdio: "pipe" });
      mounted = true;
    } catch (error) {
      console.warn(`full-disk test skipped: cannot mount a tmpfs here (${String((error as { stderr?: unknown }).stderr ?? error).trim()})`);
      return;
    }
    database = openDatabase(dbPath);
    await migrateToLatest(database);
    await importDirectory(database, acme);
    const sink = new Writable({
      write(chunk, _encoding, done) {
        logs.push(...String(chunk).split("\n").filter(Boolean));
        done();
      },
    });
    service = await startService(loadServeConfig({ port: "0", host: "127.0.0.1", db: dbPath }, { LOG_LEVEL: "info" }), createLogger({ level: "info", destination: sink }));
  });
  afterAll(async () => {
    await service?.close();
    await database?.close();
    if (mounted) execFileSync("umount", [dir]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("callers get 503 with Retry-After and the log says disk full and where; nothing acknowledged is lost; writes resume when space returns", async (ctx) => {
    if (!mounted) ctx.skip();
    const baseUrl = `http://127.0.0.1:${service!.port}`;
    const token = (await new AccessAdmin(new AuthRepository(database!), new DirectoryRepository(database!.db))
      .createToken("acme", ["usage:write"], 3600)).accessToken;
    const reader = (await new AccessAdmin(new AuthRepository(database!), new DirectoryRepository(database!.db))
      .createToken("acme", ["statistics:read"], 3600)).accessToken;
    // The log copied back and emptied first, so that the first batches grow it from nothing whatever
    // the background checkpoints did. Then leave 1 MiB free: a few batches fit, then the disk is full.
    await sql`pragma wal_checkpoint(truncate)`.execute(database!.db);
    // Filled up to the last block (written a MiB at a time, so that the store's own writes meanwhile
    // cannot make one big write fail), then cut back by that much.
    truncateSync(ballast, Math.max(0, fillUp(ballast) - 1024 * 1024));

    let acknowledged = 0;
    let acknowledgedTokens = 0n;
    let full;
    for (let batch = 0; batch < 400 && !full; batch++) {
      const sent = events(`full-${batch}`, 200);
      const reply = await record(baseUrl, token, sent);
      expect([200, 503]).toContain(reply.status);
      if (reply.status === 503) {
        full = reply;
        break;
      }
      acknowledged += reply.body.data!.recorded;
      acknowledgedTokens += sent.reduce((sum, e) => sum + BigInt(e.input_tokens), 0n);
    }
    expect(full).toMatchObject({ status: 503, retryAfter: "1", body: { code: 5030, message: "the store is out of disk space; retry later" } });
    expect(acknowledged).toBeGreaterThan(0);
    const logged = logs.map((line) => JSON.parse(line)).find((line) => line.path === RECORD && line.status === 503);
    expect(logged).toMatchObject({ level: 40, code: 5030 });
    expect(logged.store_fault).toContain("disk full");
    expect(logged.store_fault).toContain(dbPath);
    expect(logs.join("\n")).not.toContain("cannot rollback");

    // The CLI on the full disk: says so, and where. Its one chunk (20,000 events, more than the log's
    // whole size) cannot fit in the log even when a background checkpoint has let it start over.
    const file = join(tmpdir(), `eadmin-full-${process.pid}.ndjson`);
    writeFileSync(file, events("cli", 20_000).map((e) => JSON.stringify(e)).join("\n"));
    const imported = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [CLI, "import", "usage", file, "--enterprise", "acme", "--db", dbPath], { env: { ...process.env, DATABASE_URL: "" } });
      let stderr = "";
      child.stderr.on("data", (chunk) => (stderr += chunk));
      child.on("exit", (code) => resolve({ code, stderr }));
    });
    rmSync(file, { force: true });
    expect(imported.code).not.toBe(0);
    expect(imported.stderr).toContain("disk full");
    expect(imported.stderr).toContain(dbPath);
    expect(imported.stderr).not.toContain("cannot rollback");

    // Nothing acknowledged is lost, and no more than that is stored.
    expect(await storedEvents(database!)).toEqual({ count: acknowledged, tokens: String(acknowledgedTokens) });
    // Reads go on while the disk is full: a report cannot add the batches' pending rollups, and reads the raw events, exactly. The
    // log emptied and the disk filled to its last block first, so that adding them needs room there is not.
    truncateSync(ballast, Math.max(0, fillUp(ballast) - 4 * 1024 * 1024));
    await sql`pragma wal_checkpoint(truncate)`.execute(database!.db);
    fillUp(ballast);
    const report = await fetch(`${baseUrl}/openapi/v1/statistics/usage-report`, {
      method: "POST", headers: { authorization: `Bearer ${reader}`, "content-type": "application/json" },
      body: JSON.stringify({ start_time: 1_735_689_600, end_time: 1_735_689_600 + 86_400, time_zone: "UTC", bucket: "none" }),
    });
    const answered = (await report.json()) as { code: number; data: { buckets: { groups: { events: number; input_tokens: number | string }[] }[] } };
    expect([report.status, answered.code]).toStrictEqual([200, 0]);
    expect(answered.data.buckets[0]!.groups.map((g) => [Number(g.events), String(g.input_tokens)])).toStrictEqual([[acknowledged, String(acknowledgedTokens)]]);
    // The operator sees that reads went to the raw events, and why.
    const metrics = await (await fetch(`${baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/^enterprise_admin_usage_rollups_deferred_total\{reason="full"\} [1-9]\d*$/m);
    expect(metrics).toMatch(/^enterprise_admin_usage_rollups_deferred_total\{reason="busy"\} 0$/m);

    // Space returns: the same batch goes in, without a restart.
    rmSync(ballast);
    const again = await record(baseUrl, token, events("full-after", 200));
    expect(again).toMatchObject({ status: 200, body: { code: 0, data: { recorded: 200 } } });
    expect(await storedEvents(database!)).toMatchObject({ count: acknowledged + 200 });
    const { rows } = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(database!.db);
    expect(rows).toEqual([{ integrity_check: "ok" }]);
  }, 120_000);

  it("a command started on the full disk says disk full and names the database (SQLite's -shm file, made at the first read, cannot grow)", async (ctx) => {
    if (!mounted) ctx.skip();
    // Every connection closed: the last one removes the -wal and -shm files.
    await service!.close();
    await database!.close();
    [service, database] = [undefined, undefined];
    fillUp(ballast);
    const started = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [CLI, "migrate", "--db", dbPath], { env: { ...process.env, DATABASE_URL: "" } });
      let stderr = "";
      child.stderr.on("data", (chunk) => (stderr += chunk));
      child.on("exit", (code) => resolve({ code, stderr }));
    });
    rmSync(ballast);
    expect(started.code).toBe(1);
    expect(started.stderr).toMatch(new RegExp(`^error: disk full: the database ${dbPath} cannot grow \\(SQLITE_[A-Z_]+: .*\\)\n$`));
  }, 60_000);
});
