// End to end: the rules of cloud runtime environment configurations (docs/api-rules.md,
// Environment configurations), against the real service over plain fetch (REST, exact JSON) and, for a
// representative subset, the Connect client. Every secret value sent carries a marker that is searched
// for in every response body, every error message and every server log line at the end.
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { gzipSync } from "node:zlib";
import { join } from "node:path";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create as createMessage, toBinary } from "@bufbuild/protobuf";
import { CreateEnvironmentConfigRequestSchema, EnvironmentConfigService } from "../../gen/enterprise_admin/v1/environment_pb.js";
import { ErrorDetailSchema } from "../../gen/enterprise_admin/v1/errors_pb.js";
import type { DirectoryFile } from "../../src/domain/directory-file.js";
import { loadLocalKeyProvider } from "../../src/keys/local-key-provider.js";
import { EnvironmentConfigs } from "../../src/operations/environment-configs.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { EnvironmentConfigRepository } from "../../src/storage/environment-config-repository.js";
import { dialects } from "../helpers/databases.js";
import { startTestService, type TestService } from "../helpers/service.js";

const BASE = "/api/v1/environment_configs";
const RPC = "/enterprise_admin.v1.EnvironmentConfigService";

// The documented tables, written out here (not imported from src/) so the server is checked against the docs.
const SUPPORTED = [
  { field: "python_version", language: "Python", versions: ["3.10", "3.11", "3.12", "3.13", "3.14"], latest: "3.14" },
  { field: "node_version", language: "Node.js", versions: ["18", "20", "22", "24"], latest: "24" },
  { field: "go_version", language: "Go", versions: ["1.22.12", "1.23.8", "1.24.3", "1.25.1"], latest: "1.25.1" },
  { field: "rust_version", language: "Rust", versions: ["1.83.0", "1.84.0", "1.85.0", "1.86.0", "1.87.0", "1.88.0", "1.89.0", "1.90.0", "1.91.0", "1.92.0"], latest: "1.92.0" },
  { field: "java_version", language: "Java", versions: ["11", "17", "21", "22", "23", "24", "25"], latest: "25" },
  { field: "ruby_version", language: "Ruby", versions: ["3.2.3", "3.3.8", "3.4.4"], latest: "3.4.4" },
  { field: "php_version", language: "PHP", versions: ["8.2", "8.3", "8.4", "8.5"], latest: "8.5" },
  { field: "swift_version", language: "Swift", versions: ["5.10", "6.1", "6.2"], latest: "6.2" },
];
type PackageField = "python_version" | "node_version" | "go_version" | "rust_version" | "java_version" | "ruby_version" | "php_version" | "swift_version";
type Packages = Partial<Record<PackageField, string>>;

const LATEST = Object.fromEntries(SUPPORTED.map((l) => [l.field, l.latest])) as Record<PackageField, string>;
/** preinstalled_packages with nothing given: every field present, null (proto3 optional, unset). */
const NOTHING_GIVEN = Object.fromEntries(SUPPORTED.map((l) => [l.field, null])) as Record<PackageField, null>;
const ALL_TEN_SOURCES = ["npm", "pypi", "maven", "goproxy", "rubygems", "packagist", "crates", "docker", "github", "gitlab"];
const FIXED_POLICY = { mode: 1, allowlist_policy: 0, common_dependencies: ALL_TEN_SOURCES };
const KEY_RULE = "[A-Za-z_][A-Za-z0-9_]*";

const ISO_TIME = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
const NON_EMPTY = expect.stringMatching(/^\S+$/);

interface Terminal {
  name: string;
  command: string;
  description: string;
}
interface Runtime {
  install: string;
  start: string;
  terminals: Terminal[];
}
const NO_RUNTIME: Runtime = { install: "", start: "", terminals: [] };

/** The exact REST record of a configuration : every field, zero values included. */
function record(shape: { id?: unknown; name: string; description?: string; packages?: Packages; runtime?: Runtime; env?: Record<string, string>; secretKeys?: string[] }) {
  return {
    id: shape.id ?? NON_EMPTY,
    name: shape.name,
    description: shape.description ?? "",
    preinstalled_packages: { ...NOTHING_GIVEN, ...shape.packages },
    resolved_packages: { ...LATEST, ...shape.packages },
    runtime_config: shape.runtime ?? NO_RUNTIME,
    environment_variables: shape.env ?? {},
    secret_keys: shape.secretKeys ?? [],
    network_policy: FIXED_POLICY,
    create_time: ISO_TIME,
    update_time: ISO_TIME,
    etag: NON_EMPTY,
  };
}

interface Reply {
  status: number;
  text: string;
  json: any;
  requestId: string;
}

const success = (data: unknown) => ({ code: 0, message: "success", request_id: expect.any(String), data });
const failure = (code: number, message: unknown = expect.any(String)) => ({ code, message, request_id: expect.any(String), data: null });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const variables = (n: number, prefix = "VAR_", value = (i: number) => `value-${i}`) => Object.fromEntries(range(n).map((i) => [`${prefix}${i}`, value(i)]));
const terminals = (n: number) => range(n).map((i) => ({ name: `term-${i}`, command: `worker --id ${i}`, description: `worker ${i}` }));

/** A third tenant with no configurations of its own, for exact list pages. */
const initech: DirectoryFile = {
  enterprise: { enterprise_id: "initech", name: "Initech", currency: "USD" },
  departments: [{ department_id: "5000", parent_department_id: "0", name: "Initech" }],
  members: [],
};
const hooli: DirectoryFile = {
  enterprise: { enterprise_id: "hooli", name: "Hooli", currency: "USD" },
  departments: [{ department_id: "6000", parent_department_id: "0", name: "Hooli" }],
  members: [],
};

describe.each(dialects)("environment config rules (%s)", (dialect) => {
  let svc: TestService;
  let keyDir: string;
  let keyFile: string;
  let token: string; // acme, every permission
  let globexToken: string;
  let initechToken: string;
  let readToken: string;
  let writeToken: string;
  let configs: EnvironmentConfigs; // the operations over the same database and key file, to reveal secrets

  // Every secret value sent in this block contains MARK; it must never come back.
  const MARK = `UNIQUE-${randomBytes(6).toString("hex")}`;
  let secretCount = 0;
  const secretValue = () => `sk-live-${MARK}-${++secretCount}-${randomBytes(4).toString("hex")}`;
  const secretMap = (n: number, prefix = "SECRET_") => Object.fromEntries(range(n).map((i) => [`${prefix}${i}`, secretValue()]));

  const replies: Reply[] = []; // every REST (and raw Connect) reply of this block
  const requestIds: string[] = [];
  const connectTexts: string[] = []; // every Connect error message, detail and response, as text

  let nameCount = 0;
  const uniqueName = (prefix: string) => `${prefix}-${++nameCount}`;

  beforeAll(async () => {
    keyDir = await mkdtemp(join(tmpdir(), "env-rules-key-"));
    keyFile = join(keyDir, "master.key");
    svc = await startTestService(dialect, { ENTERPRISE_ADMIN_MASTER_KEY_FILE: keyFile });
    await importDirectory(svc.database, initech);
    await importDirectory(svc.database, hooli);
    token = await svc.token();
    globexToken = await svc.token(undefined, "globex");
    initechToken = await svc.token(undefined, "initech");
    readToken = await svc.token(["environments:read"]);
    writeToken = await svc.token(["environments:write"]);
    const keys = await loadLocalKeyProvider({ databaseUrl: svc.databaseUrl, env: { ENTERPRISE_ADMIN_MASTER_KEY_FILE: keyFile } });
    configs = new EnvironmentConfigs(new EnvironmentConfigRepository(svc.database), keys);
  });

  afterAll(async () => {
    await svc?.close();
    if (keyDir) await rm(keyDir, { recursive: true, force: true });
  });

  async function send(method: string, path: string, init: { body?: unknown; raw?: string; token?: string | null; contentType?: string } = {}): Promise<Reply> {
    const headers: Record<string, string> = {};
    const bearer = init.token === undefined ? token : init.token;
    if (bearer !== null) headers.authorization = `Bearer ${bearer}`;
    const body = init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body));
    if (body !== undefined) headers["content-type"] = init.contentType ?? "application/json";
    const res = await fetch(svc.baseUrl + path, { method, headers, body });
    const text = await res.text();
    const requestId = res.headers.get("x-request-id") ?? "";
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const reply = { status: res.status, text, json, requestId };
    replies.push(reply);
    requestIds.push(requestId);
    return reply;
  }

  const createReply = (body: unknown, as?: string | null) => send("POST", BASE, { body, token: as });
  const getReply = (id: string, as?: string | null) => send("GET", `${BASE}/${encodeURIComponent(id)}`, { token: as });
  const patchReply = (id: string, body: unknown, as?: string | null) => send("PATCH", `${BASE}/${encodeURIComponent(id)}`, { body, token: as });
  const deleteReply = (id: string, as?: string | null, query = "") => send("DELETE", `${BASE}/${encodeURIComponent(id)}${query}`, { token: as });
  const listReply = (query = "", as?: string | null) => send("GET", `${BASE}${query}`, { token: as });
  const planReply = (id: string, as?: string | null) => send("GET", `${BASE}/${encodeURIComponent(id)}/startup_plan`, { token: as });

  /** Creates and returns the record; fails the test unless the create succeeds. */
  async function create(body: Record<string, unknown>, as?: string): Promise<any> {
    const reply = await createReply(body, as);
    expect(reply.json, reply.text).toMatchObject({ code: 0 });
    expect(reply.status).toBe(200);
    return reply.json.data;
  }

  async function get(id: string): Promise<any> {
    const reply = await getReply(id);
    expect(reply.status, reply.text).toBe(200);
    return reply.json.data;
  }

  async function expectCreateInvalid(body: Record<string, unknown>, message: string): Promise<void> {
    const reply = await createReply(body);
    expect(reply.json).toStrictEqual(failure(4001, message));
    expect(reply.status).toBe(400);
  }

  async function expectCreated(body: Record<string, unknown>): Promise<any> {
    const reply = await createReply(body);
    expect(reply.json, reply.text).toMatchObject({ code: 0 });
    expect(reply.status).toBe(200);
    return reply.json.data;
  }

  // ---------------------------------------------------------------------------------------------
  describe("create and get", () => {
    it("create returns every field: as given, resolved, sorted secret keys, the fixed policy, times and etag", async () => {
      const secrets = { zeta_token: secretValue(), API_KEY: secretValue(), _private: secretValue(), db_password: secretValue() };
      const runtime = {
        install: "npm ci && pip install -r requirements.txt",
        start: "npm run dev",
        terminals: [
          { name: "worker", command: "npm run worker", description: "queue worker" },
          { name: "db", command: "postgres -D /data", description: "" },
        ],
      };
      const body = {
        name: uniqueName("full"),
        description: "Front end with a Python side car",
        preinstalled_packages: { python_version: "3.12", node_version: "20" },
        runtime_config: runtime,
        environment_variables: { LOG_LEVEL: "debug", PORT: "3000" },
        secrets,
      };
      const reply = await createReply(body);
      expect(reply.status).toBe(200);
      expect(reply.json).toStrictEqual(success(record({
        name: body.name,
        description: body.description,
        packages: { python_version: "3.12", node_version: "20" },
        runtime,
        env: { LOG_LEVEL: "debug", PORT: "3000" },
        secretKeys: ["API_KEY", "_private", "db_password", "zeta_token"],
      })));
      const data = reply.json.data;
      expect(data.id).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
      expect(data.update_time).toBe(data.create_time);
      expect(Math.abs(Date.parse(data.create_time) - Date.now())).toBeLessThan(60_000);
      expect(reply.json.request_id).toBe(reply.requestId);

      // get returns the same record; the sealed values are really stored
      expect(await get(data.id)).toStrictEqual(data);
      expect(await configs.revealSecrets("acme", data.id)).toStrictEqual(secrets);
    });

    it("a configuration with only a name gets every default: all eight latest versions, empty scripts and maps", async () => {
      const name = uniqueName("minimal");
      const reply = await createReply({ name });
      expect(reply.json).toStrictEqual(success(record({ name })));
      expect(await get(reply.json.data.id)).toStrictEqual(reply.json.data);
    });

    it("terminal descriptions default to empty and are returned", async () => {
      const data = await create({ name: uniqueName("term-defaults"), runtime_config: { terminals: [{ name: "logs", command: "tail -f log" }] } });
      expect(data.runtime_config).toStrictEqual({ install: "", start: "", terminals: [{ name: "logs", command: "tail -f log", description: "" }] });
    });

    it("a query parameter naming a path variable's field is 4001 (the path's id is not overridden)", async () => {
      const made = await create({ name: "path-and-query" });
      const reply = await send("GET", `${BASE}/${encodeURIComponent(made.id)}?id=env_other`);
      expect([reply.status, reply.json]).toStrictEqual([400, failure(4001, "id: given twice; send it once")]);
    });

    it("get of an unknown id is 404 with 4041", async () => {
      const reply = await getReply("env_does_not_exist");
      expect(reply.status).toBe(404);
      expect(reply.json).toStrictEqual(failure(4041, 'environment config "env_does_not_exist" not found'));
    });
  });

  // ---------------------------------------------------------------------------------------------
  describe("limits: the maximum passes, one past it fails with 4001 naming field and limit", () => {
    it("50 secrets pass, 51 fail", async () => {
      const ok = await expectCreated({ name: uniqueName("secrets-50"), secrets: secretMap(50) });
      expect(ok.secret_keys).toHaveLength(50);
      await expectCreateInvalid({ name: uniqueName("secrets-51"), secrets: secretMap(51) }, "secrets: 51 keys > 50");
    });

    it("an update may bring secrets to 50 but not to 51 (kept secrets count)", async () => {
      const data = await create({ name: uniqueName("secrets-update"), secrets: secretMap(49) });
      const to50 = await patchReply(data.id, { secrets: { EXTRA_1: secretValue() } });
      expect(to50.status).toBe(200);
      expect(to50.json.data.secret_keys).toHaveLength(50);
      const to51 = await patchReply(data.id, { secrets: { EXTRA_2: secretValue() } });
      expect(to51.json).toStrictEqual(failure(4001, "secrets: 51 keys > 50"));
      // one in, one out stays at 50
      const swap = await patchReply(data.id, { secrets: { EXTRA_2: secretValue() }, remove_secret_keys: ["EXTRA_1"] });
      expect(swap.status).toBe(200);
      expect(swap.json.data.secret_keys).toHaveLength(50);
      expect(swap.json.data.secret_keys).toContain("EXTRA_2");
      expect(swap.json.data.secret_keys).not.toContain("EXTRA_1");
    });

    it("100 environment variables pass, 101 fail", async () => {
      const env = variables(100);
      const ok = await expectCreated({ name: uniqueName("env-100"), environment_variables: env });
      expect(ok.environment_variables).toStrictEqual(env);
      await expectCreateInvalid({ name: uniqueName("env-101"), environment_variables: variables(101) }, "environment_variables: 101 keys > 100");
      const data = await create({ name: uniqueName("env-update"), environment_variables: variables(3) });
      expect((await patchReply(data.id, { environment_variables: variables(101) })).json).toStrictEqual(failure(4001, "environment_variables: 101 keys > 100"));
      expect((await patchReply(data.id, { environment_variables: variables(100) })).status).toBe(200);
    });

    it("10 terminals pass, 11 fail", async () => {
      const ok = await expectCreated({ name: uniqueName("terminals-10"), runtime_config: { terminals: terminals(10) } });
      expect(ok.runtime_config.terminals).toStrictEqual(terminals(10));
      await expectCreateInvalid({ name: uniqueName("terminals-11"), runtime_config: { terminals: terminals(11) } }, "runtime_config.terminals: 11 terminals > 10");
    });

    it.each(["install", "start"])("%s: exactly 10240 bytes pass, 10241 fail", async (script) => {
      const ok = await expectCreated({ name: uniqueName(`${script}-max`), runtime_config: { [script]: "x".repeat(10240) } });
      expect(ok.runtime_config[script]).toHaveLength(10240);
      await expectCreateInvalid({ name: uniqueName(`${script}-over`), runtime_config: { [script]: "x".repeat(10241) } },
        `runtime_config.${script}: 10241 bytes > 10240 (10 KB of UTF-8)`);
    });

    it.each(["install", "start"])("%s: sizes count UTF-8 bytes (é is 2 bytes, 😀 is 4)", async (script) => {
      // 5120 × "é" = 10240 bytes in 5120 characters: passes
      const accented = "é".repeat(5120);
      expect((await expectCreated({ name: uniqueName(`${script}-e`), runtime_config: { [script]: accented } })).runtime_config[script]).toBe(accented);
      // 2560 × "😀" = 10240 bytes (5120 UTF-16 units, 2560 code points): passes
      const emoji = "😀".repeat(2560);
      expect((await expectCreated({ name: uniqueName(`${script}-emoji`), runtime_config: { [script]: emoji } })).runtime_config[script]).toBe(emoji);
      // one more byte fails, though only 5121 characters
      await expectCreateInvalid({ name: uniqueName(`${script}-e-over`), runtime_config: { [script]: `${accented}a` } },
        `runtime_config.${script}: 10241 bytes > 10240 (10 KB of UTF-8)`);
      await expectCreateInvalid({ name: uniqueName(`${script}-e-over2`), runtime_config: { [script]: "é".repeat(5121) } },
        `runtime_config.${script}: 10242 bytes > 10240 (10 KB of UTF-8)`);
    });

    it("a script limit is checked on update too", async () => {
      const data = await create({ name: uniqueName("script-update"), runtime_config: { install: "make" } });
      const reply = await patchReply(data.id, { runtime_config: { install: "make", start: "x".repeat(10241) } });
      expect(reply.json).toStrictEqual(failure(4001, "runtime_config.start: 10241 bytes > 10240 (10 KB of UTF-8)"));
    });

    it("each terminal command: 4096 bytes pass, 4097 fail (UTF-8 bytes, the terminal named by index)", async () => {
      const list = terminals(4);
      list[0]!.command = "y".repeat(4096);
      list[1]!.command = "é".repeat(2048);
      const ok = await expectCreated({ name: uniqueName("command-max"), runtime_config: { terminals: list } });
      expect(ok.runtime_config.terminals).toStrictEqual(list);

      const over = terminals(4);
      over[3]!.command = "y".repeat(4097);
      await expectCreateInvalid({ name: uniqueName("command-over"), runtime_config: { terminals: over } },
        "runtime_config.terminals[3].command: 4097 bytes > 4096 (4 KB of UTF-8)");
      const overAccented = terminals(2);
      overAccented[1]!.command = `${"é".repeat(2048)}z`;
      await expectCreateInvalid({ name: uniqueName("command-over-e"), runtime_config: { terminals: overAccented } },
        "runtime_config.terminals[1].command: 4097 bytes > 4096 (4 KB of UTF-8)");
    });

    it("name: 64 characters pass (multi-byte characters count once), 65 fail, empty fails", async () => {
      for (const name of ["n".repeat(64), "é".repeat(64), "😀".repeat(64)]) {
        expect((await expectCreated({ name })).name).toBe(name);
      }
      await expectCreateInvalid({ name: "n".repeat(65) }, "name: 65 characters > 64");
      await expectCreateInvalid({ name: "é".repeat(65) }, "name: 65 characters > 64");
      await expectCreateInvalid({ name: "" }, "name: required, 1 to 64 characters");
      await expectCreateInvalid({ name: "   " }, "name: required, 1 to 64 characters");
      await expectCreateInvalid({ description: "no name" }, "name: required, 1 to 64 characters");
    });

    it("a name, or a terminal's, with a control character or white space at an end is 4001; a terminal without a command is 4001", async () => {
      const control = "name: must not contain control characters (U+0000 to U+001F, U+007F to U+009F)";
      for (const name of ["a\nb", "\u001f".repeat(8), "tab\there", "c1\u0085"]) await expectCreateInvalid({ name }, control);
      for (const name of [" padded", "padded ", "\u00a0nbsp"]) await expectCreateInvalid({ name }, "name: must not begin or end with white space");
      const terminal = (fields: Record<string, string>) => ({ name: uniqueName("terminal-rules"), runtime_config: { terminals: [{ name: "t", command: "run", ...fields }] } });
      await expectCreateInvalid(terminal({ name: "t\r" }), `runtime_config.terminals[0].${control}`);
      await expectCreateInvalid(terminal({ name: "t " }), "runtime_config.terminals[0].name: must not begin or end with white space");
      await expectCreateInvalid(terminal({ command: "" }), "runtime_config.terminals[0].command: required (the command the terminal runs)");
      await expectCreateInvalid(terminal({ command: "  " }), "runtime_config.terminals[0].command: required (the command the terminal runs)");
      // Invisible or reordering characters would make two names look alike, or one look like another (they were taken).
      const hidden = "name: must not contain invisible or text-direction characters (Unicode's default-ignorable and bidi-control ones, line and paragraph separators; U+200C, U+200D and variation selectors may)";
      for (const name of ["prod\u200b", "pr\u2060od", "\ufeffprod", "prod-\u202eved", "\u2066prod\u2069", "prod\u200e", "pro\u00add", "p\u2062rod", "prod\u3164", "prod\u{e0041}", "pr\u2028od"]) {
        await expectCreateInvalid({ name }, hidden);
      }
      await expectCreateInvalid(terminal({ name: "t\u200b" }), `runtime_config.terminals[0].${hidden}`);
      // Inside a name, spaces, joined emoji, joiners and variation selectors stay.
      for (const name of ["two words 👨‍👩‍👧", "می\u200cخواهم", "heart \u2764\ufe0f"]) expect((await expectCreated({ name })).name).toBe(name);
    });

    it("a rename is held to the same name rules", async () => {
      const data = await create({ name: uniqueName("rename-rules") });
      expect((await patchReply(data.id, { name: "r".repeat(65) })).json).toStrictEqual(failure(4001, "name: 65 characters > 64"));
      expect((await patchReply(data.id, { name: "" })).json).toStrictEqual(failure(4001, "name: required, 1 to 64 characters"));
      const renamed = await patchReply(data.id, { name: "r".repeat(64) });
      expect(renamed.status).toBe(200);
      expect(renamed.json.data.name).toBe("r".repeat(64));
    });

    it(`variable keys match ${KEY_RULE}: "1BAD" and "has-dash" fail, "_ok" passes (both maps)`, async () => {
      for (const key of ["1BAD", "has-dash", "", "has space", "ünï"]) {
        await expectCreateInvalid({ name: uniqueName("bad-env-key"), environment_variables: { [key]: "v" } },
          `environment_variables: key ${JSON.stringify(key)} must match ${KEY_RULE}`);
        await expectCreateInvalid({ name: uniqueName("bad-secret-key"), secrets: { [key]: secretValue() } },
          `secrets: key ${JSON.stringify(key)} must match ${KEY_RULE}`);
      }
      const ok = await expectCreated({ name: uniqueName("good-keys"), environment_variables: { _ok: "1", A9_b: "2", _: "3" }, secrets: { _ok_secret: secretValue(), Z: secretValue() } });
      expect(ok.environment_variables).toStrictEqual({ _ok: "1", A9_b: "2", _: "3" });
      expect(ok.secret_keys).toStrictEqual(["Z", "_ok_secret"]);
    });

    it("a key can't be both a secret and an environment variable (create and update)", async () => {
      await expectCreateInvalid({ name: uniqueName("both"), environment_variables: { SHARED: "plain" }, secrets: { SHARED: secretValue() } },
        "secrets.SHARED: the key is also an environment variable; a key can be one or the other");
      const data = await create({ name: uniqueName("both-update"), environment_variables: { PLAIN: "1" }, secrets: { HIDDEN: secretValue() } });
      expect((await patchReply(data.id, { secrets: { PLAIN: secretValue() } })).json)
        .toStrictEqual(failure(4001, "secrets.PLAIN: the key is also an environment variable; a key can be one or the other"));
      expect((await patchReply(data.id, { environment_variables: { PLAIN: "1", HIDDEN: "x" } })).json)
        .toStrictEqual(failure(4001, "secrets.HIDDEN: the key is also an environment variable; a key can be one or the other"));
      // once the secret is removed, the key may become a plain variable in the same update
      const moved = await patchReply(data.id, { remove_secret_keys: ["HIDDEN"], environment_variables: { PLAIN: "1", HIDDEN: "x" } });
      expect(moved.status).toBe(200);
      expect(moved.json.data.secret_keys).toStrictEqual([]);
      expect(moved.json.data.environment_variables).toStrictEqual({ PLAIN: "1", HIDDEN: "x" });
    });

    it("terminal names must be non-empty and unique", async () => {
      await expectCreateInvalid({ name: uniqueName("term-empty"), runtime_config: { terminals: [{ name: "a", command: "x" }, { name: "", command: "y" }] } },
        "runtime_config.terminals[1].name: required (a non-empty name)");
      await expectCreateInvalid({ name: uniqueName("term-blank"), runtime_config: { terminals: [{ name: "  ", command: "y" }] } },
        "runtime_config.terminals[0].name: required (a non-empty name)");
      await expectCreateInvalid({ name: uniqueName("term-dup"), runtime_config: { terminals: [{ name: "web", command: "a" }, { name: "api", command: "b" }, { name: "web", command: "c" }] } },
        'runtime_config.terminals[2].name: "web" is used by another terminal; names are unique');
      // names differing only in case are different names
      await expectCreated({ name: uniqueName("term-case"), runtime_config: { terminals: [{ name: "web", command: "a" }, { name: "Web", command: "b" }] } });
    });

    it.each(SUPPORTED.map((l) => [l.field, l] as const))("%s: an unsupported version fails and the message lists the supported ones", async (_field, language) => {
      for (const bad of ["0.1", "", `${language.latest}.0`, "latest"]) {
        await expectCreateInvalid({ name: uniqueName("bad-version"), preinstalled_packages: { [language.field]: bad } },
          `preinstalled_packages.${language.field}: ${JSON.stringify(bad)} is not supported; supported ${language.language} versions: ${language.versions.join(", ")}`);
      }
    });

    it("every supported version passes; an omitted language resolves to the latest in resolved_packages", async () => {
      for (const index of [0, 1]) {
        const given = Object.fromEntries(SUPPORTED.map((l) => [l.field, l.versions[Math.min(index, l.versions.length - 1)]!])) as Packages;
        const data = await expectCreated({ name: uniqueName("versions"), preinstalled_packages: given });
        expect(data.preinstalled_packages).toStrictEqual(given);
        expect(data.resolved_packages).toStrictEqual(given);
      }
      for (const language of SUPPORTED) {
        for (const version of language.versions) {
          const data = await expectCreated({ name: uniqueName("one-version"), preinstalled_packages: { [language.field]: version } });
          expect(data.preinstalled_packages).toStrictEqual({ ...NOTHING_GIVEN, [language.field]: version });
          expect(data.resolved_packages).toStrictEqual({ ...LATEST, [language.field]: version });
        }
      }
    });

    it("a version must be a string", async () => {
      await expectCreateInvalid({ name: uniqueName("numeric-version"), preinstalled_packages: { python_version: 3.12 } },
        "preinstalled_packages.python_version: expected a string");
    });

    it("a supplied network_policy equal to the fixed block passes", async () => {
      const data = await expectCreated({ name: uniqueName("policy-same"), network_policy: FIXED_POLICY });
      expect(data.network_policy).toStrictEqual(FIXED_POLICY);
      expect((await patchReply(data.id, { network_policy: FIXED_POLICY, description: "same policy" })).status).toBe(200);
    });

    it.each([
      ["fewer sources", { ...FIXED_POLICY, common_dependencies: ALL_TEN_SOURCES.slice(0, 9) }],
      ["an extra source", { ...FIXED_POLICY, common_dependencies: [...ALL_TEN_SOURCES, "pypi-mirror.example"] }],
      ["no sources", { ...FIXED_POLICY, common_dependencies: [] }],
      ["a duplicate in place of a source", { ...FIXED_POLICY, common_dependencies: [...ALL_TEN_SOURCES.slice(0, 9), "npm"] }],
      ["mode 0", { ...FIXED_POLICY, mode: 0 }],
      ["allowlist_policy 1", { ...FIXED_POLICY, allowlist_policy: 1 }],
      ["an empty block", {}],
    ])("a different network_policy (%s) fails, on create and update", async (_what, policy) => {
      const message = "network_policy: the policy is fixed and cannot be customized; it is mode 1, allowlist_policy 0, common_dependencies npm, pypi, maven, goproxy, rubygems, packagist, crates, docker, github, gitlab";
      await expectCreateInvalid({ name: uniqueName("policy-other"), network_policy: policy }, message);
      const data = await create({ name: uniqueName("policy-update") });
      expect((await patchReply(data.id, { network_policy: policy })).json).toStrictEqual(failure(4001, message));
    });

    it("container_image is rejected, at the top level and inside preinstalled_packages", async () => {
      await expectCreateInvalid({ name: uniqueName("image"), container_image: "ubuntu:24.04" }, "container_image: unknown field");
      await expectCreateInvalid({ name: uniqueName("image"), preinstalled_packages: { python_version: "3.12", container_image: "ubuntu:24.04" } },
        "preinstalled_packages.container_image: unknown field");
      const data = await create({ name: uniqueName("image-update") });
      expect((await patchReply(data.id, { container_image: "ubuntu:24.04" })).json).toStrictEqual(failure(4001, "container_image: unknown field"));
    });

    it("unknown fields are rejected with their path (create and update)", async () => {
      await expectCreateInvalid({ name: uniqueName("unknown"), colour: "blue" }, "colour: unknown field");
      await expectCreateInvalid({ name: uniqueName("unknown"), runtime_config: { install: "make", cwd: "/src" } }, "runtime_config.cwd: unknown field");
      await expectCreateInvalid({ name: uniqueName("unknown"), runtime_config: { terminals: [{ name: "a", command: "b", restart: true }] } },
        "runtime_config.terminals[0].restart: unknown field");
      await expectCreateInvalid({ name: uniqueName("unknown"), network_policy: { ...FIXED_POLICY, custom_sources: ["x"] } }, "network_policy.custom_sources: unknown field");
      const data = await create({ name: uniqueName("unknown-update") });
      expect((await patchReply(data.id, { descriptoin: "typo" })).json).toStrictEqual(failure(4001, "descriptoin: unknown field"));
      expect(await get(data.id)).toStrictEqual(data);
    });

    it("a name is unique within the enterprise (409 4091); another enterprise may use it", async () => {
      const name = uniqueName("taken");
      const first = await create({ name });
      const again = await createReply({ name, description: "second" });
      expect(again.status).toBe(409);
      expect(again.json).toStrictEqual(failure(4091, `name: ${JSON.stringify(name)} is already used by another environment config of this enterprise`));
      const elsewhere = await createReply({ name }, globexToken);
      expect(elsewhere.status).toBe(200);
      expect(elsewhere.json).toStrictEqual(success(record({ name })));
      expect(elsewhere.json.data.id).not.toBe(first.id);

      // a rename onto a taken name is refused too; keeping one's own name is fine
      const other = await create({ name: uniqueName("taken-other") });
      const rename = await patchReply(other.id, { name });
      expect(rename.status).toBe(409);
      expect(rename.json).toStrictEqual(failure(4091, `name: ${JSON.stringify(name)} is already used by another environment config of this enterprise`));
      expect((await patchReply(first.id, { name, description: "kept name" })).status).toBe(200);
      // names are compared exactly: another case is another name
      expect((await createReply({ name: name.toUpperCase() })).status).toBe(200);
    });

    it("concurrent creates of one name: exactly one succeeds, the others get 409 4091 (never 500)", async () => {
      for (let round = 0; round < 3; round++) {
        const name = uniqueName("race");
        const results = await Promise.all(range(16).map(() => createReply({ name })));
        const statuses = results.map((r) => r.status).sort();
        expect(statuses).toStrictEqual([200, ...range(15).map(() => 409)]);
        for (const r of results.filter((x) => x.status === 409)) expect(r.json).toStrictEqual(failure(4091, expect.stringContaining("name")));
      }
    });

    it("a NUL character in a name or description is bad input, not a server fault (no 500)", async () => {
      for (const body of [{ name: `nul\u0000name-${nameCount++}` }, { name: uniqueName("nul-description"), description: "a\u0000b" }]) {
        const reply = await createReply(body);
        expect([200, 400], reply.text).toContain(reply.status);
        expect(reply.json.code).not.toBe(2001);
      }
      const lookup = await getReply("env_\u0000");
      expect([400, 404], lookup.text).toContain(lookup.status);
    });
  });

  // ---------------------------------------------------------------------------------------------
  describe("list and pagination", () => {
    let created: any[];

    beforeAll(async () => {
      // created out of order; listed by name in code point order ("Zulu" before "alpha")
      created = [];
      for (const name of ["charlie", "alpha", "echo", "Zulu", "bravo"]) {
        created.push(await create({ name, secrets: { TOKEN: secretValue() }, environment_variables: { WHO: name } }, initechToken));
      }
    });
    const byName = (name: string) => created.find((c) => c.name === name);

    it("pages with page_size and next_page_token, in name order, full records", async () => {
      const page1 = await listReply("?page_size=2", initechToken);
      expect(page1.json).toStrictEqual(success({ items: [byName("Zulu"), byName("alpha")], next_page_token: NON_EMPTY }));
      const page2 = await listReply(`?page_size=2&page_token=${encodeURIComponent(page1.json.data.next_page_token)}`, initechToken);
      expect(page2.json).toStrictEqual(success({ items: [byName("bravo"), byName("charlie")], next_page_token: NON_EMPTY }));
      const page3 = await listReply(`?page_size=2&page_token=${encodeURIComponent(page2.json.data.next_page_token)}`, initechToken);
      expect(page3.json).toStrictEqual(success({ items: [byName("echo")], next_page_token: "" }));
    });

    it("page_size 0 means the default (all five here), and a size above 100 is lowered", async () => {
      const all = ["Zulu", "alpha", "bravo", "charlie", "echo"].map(byName);
      expect((await listReply("", initechToken)).json).toStrictEqual(success({ items: all, next_page_token: "" }));
      expect((await listReply("?page_size=0", initechToken)).json).toStrictEqual(success({ items: all, next_page_token: "" }));
      expect((await listReply("?page_size=1000", initechToken)).json).toStrictEqual(success({ items: all, next_page_token: "" }));
    });

    it("a page that holds the rest of the list has an empty next_page_token", async () => {
      const page1 = await listReply("?page_size=5", initechToken);
      expect(page1.json.data.items).toHaveLength(5);
      expect(page1.json.data.next_page_token).toBe("");
    });

    it("an enterprise with no configurations lists none", async () => {
      expect((await listReply("", await svc.token(undefined, "hooli"))).json).toStrictEqual(success({ items: [], next_page_token: "" }));
    });

    it("a foreign or forged page_token is 4001", async () => {
      const departmentsToken = await svc.token(["departments:read"]);
      const children = await send("GET", "/openapi/v1/departments/100/children?page_size=1", { token: departmentsToken });
      const foreign = children.json.data.next_page_token as string;
      expect(foreign).not.toBe("");
      // Page tokens are not signed: one made by hand with this list's fingerprint and a cursor that is not JSON is refused too.
      const fingerprint = createHash("sha256").update("environment-configs").digest("base64url").slice(0, 12);
      const handMade = Buffer.from(JSON.stringify({ q: fingerprint, a: "notjson{" })).toString("base64url");
      for (const pageToken of [foreign, "not-a-token", Buffer.from('{"q":"x","a":"[\\"a\\",\\"b\\"]"}').toString("base64url"), handMade]) {
        const reply = await listReply(`?page_token=${encodeURIComponent(pageToken)}`, initechToken);
        expect(reply.status).toBe(400);
        expect(reply.json).toStrictEqual(failure(4001, "page_token: not a token returned by this query"));
      }
    });

    it("a page token made by hand with U+0000 in its cursor is 4001, also for departments' children (PostgreSQL cannot compare it)", async () => {
      const token = (query: string, after: string) =>
        Buffer.from(JSON.stringify({ q: createHash("sha256").update(query).digest("base64url").slice(0, 12), a: after })).toString("base64url");
      const list = await listReply(`?page_token=${token("environment-configs", JSON.stringify(["\u0000", ""]))}`, initechToken);
      expect(list.json).toStrictEqual(failure(4001, "page_token: not a token returned by this query"));
      const children = await send("GET", `/openapi/v1/departments/100/children?page_token=${token("children:100", "\u0000")}`,
        { token: await svc.token(["departments:read"]) });
      expect(children.json).toStrictEqual(failure(4001, "page_token: not a token returned by this query"));
    });

    it("a negative page_size is 4001", async () => {
      const reply = await listReply("?page_size=-1", initechToken);
      expect(reply.json).toStrictEqual(failure(4001, expect.stringContaining("page_size")));
    });
  });

  // ---------------------------------------------------------------------------------------------
  describe("update", () => {
    const baseRuntime = { install: "pip install -r requirements.txt", start: "python app.py", terminals: [{ name: "celery", command: "celery worker", description: "jobs" }] };
    async function base() {
      const secrets = { S1: secretValue(), S2: secretValue() };
      const data = await create({
        name: uniqueName("update"),
        description: "before",
        preinstalled_packages: { python_version: "3.12", node_version: "20" },
        runtime_config: baseRuntime,
        environment_variables: { A: "1", B: "2" },
        secrets,
      });
      return { data, secrets };
    }
    /** The record after an update that changed `changes`: etag and update_time move, create_time stays. */
    const updated = (before: any, changes: Record<string, unknown>) => ({ ...before, ...changes, update_time: ISO_TIME, etag: NON_EMPTY });

    async function expectUpdate(before: any, body: Record<string, unknown>, changes: Record<string, unknown>): Promise<any> {
      const reply = await patchReply(before.id, body);
      expect(reply.json).toStrictEqual(success(updated(before, changes)));
      const after = reply.json.data;
      expect(after.etag).not.toBe(before.etag);
      expect(after.create_time).toBe(before.create_time);
      expect(Date.parse(after.update_time)).toBeGreaterThan(Date.parse(before.update_time));
      expect(await get(before.id)).toStrictEqual(after);
      return after;
    }

    it("only the fields present change: description", async () => {
      const { data, secrets } = await base();
      await expectUpdate(data, { description: "after" }, { description: "after" });
      expect(await configs.revealSecrets("acme", data.id)).toStrictEqual(secrets);
    });

    it("an empty description clears it (a present field replaces, even with a zero value)", async () => {
      const { data } = await base();
      await expectUpdate(data, { description: "" }, { description: "" });
    });

    it("preinstalled_packages is replaced as a whole; the omitted languages resolve to the latest again", async () => {
      const { data } = await base();
      await expectUpdate(data, { preinstalled_packages: { go_version: "1.24.3" } }, {
        preinstalled_packages: { ...NOTHING_GIVEN, go_version: "1.24.3" },
        resolved_packages: { ...LATEST, go_version: "1.24.3" },
      });
    });

    it("runtime_config is replaced as a whole", async () => {
      const { data } = await base();
      await expectUpdate(data, { runtime_config: { start: "python app.py --reload" } }, { runtime_config: { install: "", start: "python app.py --reload", terminals: [] } });
    });

    it("environment_variables are replaced as a whole; {} clears them", async () => {
      const { data } = await base();
      const after = await expectUpdate(data, { environment_variables: { C: "3" } }, { environment_variables: { C: "3" } });
      await expectUpdate(after, { environment_variables: {} }, { environment_variables: {} });
    });

    it("a rename changes only the name", async () => {
      const { data } = await base();
      const name = uniqueName("renamed");
      await expectUpdate(data, { name }, { name });
    });

    it("secrets set or replace only the keys named and keep the rest", async () => {
      const { data, secrets } = await base();
      const S2 = secretValue();
      const S3 = secretValue();
      await expectUpdate(data, { secrets: { S2, S3 } }, { secret_keys: ["S1", "S2", "S3"] });
      expect(await configs.revealSecrets("acme", data.id)).toStrictEqual({ S1: secrets.S1, S2, S3 });
    });

    it("remove_secret_keys deletes the named secrets; with secrets in one update", async () => {
      const { data, secrets } = await base();
      const after = await expectUpdate(data, { remove_secret_keys: ["S1"] }, { secret_keys: ["S2"] });
      expect(await configs.revealSecrets("acme", data.id)).toStrictEqual({ S2: secrets.S2 });
      const S4 = secretValue();
      await expectUpdate(after, { secrets: { S4 }, remove_secret_keys: ["S2"] }, { secret_keys: ["S4"] });
      expect(await configs.revealSecrets("acme", data.id)).toStrictEqual({ S4 });
    });

    it("removing an unknown secret key, or one also set in the same update, is 4001 and changes nothing", async () => {
      const { data, secrets } = await base();
      expect((await patchReply(data.id, { remove_secret_keys: ["NOPE"] })).json)
        .toStrictEqual(failure(4001, 'remove_secret_keys: "NOPE" is not a secret of this environment config'));
      expect((await patchReply(data.id, { secrets: { S1: secretValue() }, remove_secret_keys: ["S1"] })).json)
        .toStrictEqual(failure(4001, 'remove_secret_keys: "S1" is also set in secrets'));
      expect(await get(data.id)).toStrictEqual(data);
      expect(await configs.revealSecrets("acme", data.id)).toStrictEqual(secrets);
    });

    it("a failed update changes nothing (the whole configuration is checked first)", async () => {
      const { data, secrets } = await base();
      const reply = await patchReply(data.id, { description: "never", secrets: { S1: secretValue() }, runtime_config: { install: "x".repeat(10241) } });
      expect(reply.status).toBe(400);
      expect(await get(data.id)).toStrictEqual(data);
      expect(await configs.revealSecrets("acme", data.id)).toStrictEqual(secrets);
    });

    it("the current etag applies; a stale etag is 409 4092 and changes nothing; no etag applies", async () => {
      const { data } = await base();
      const first = await expectUpdate(data, { description: "one", etag: data.etag }, { description: "one" });
      const stale = await patchReply(data.id, { description: "two", etag: data.etag });
      expect(stale.status).toBe(409);
      expect(stale.json).toStrictEqual(failure(4092, "etag: the environment config changed since it was read; get it again and retry"));
      expect(await get(data.id)).toStrictEqual(first);
      const second = await expectUpdate(first, { description: "three" }, { description: "three" });
      const third = await expectUpdate(second, { description: "four", etag: second.etag }, { description: "four" });
      expect(new Set([data.etag, first.etag, second.etag, third.etag]).size).toBe(4);
    });

    it("an update without an etag that meets another writer's open transaction waits for it and applies after it (not 409)", async () => {
      const { data } = await base();
      let patched: Promise<Reply> | undefined;
      // Another writer's update of the row, not yet committed, when the PATCH reads it: on PostgreSQL the PATCH read the revision
      // before it, and its update then found the revision moved.
      await svc.database.writeTransaction(async (trx) => {
        await trx.updateTable("environment_config").set((eb) => ({ revision: eb("revision", "+", 1) })).where("id", "=", data.id).execute();
        patched = patchReply(data.id, { description: "after the other writer" });
        await sleep(300);
      });
      const reply = await patched!;
      expect(reply.json, JSON.stringify(reply.json)).toMatchObject({ code: 0, data: { description: "after the other writer" } });
      expect((await get(data.id)).description).toBe("after the other writer");
    });

    it("an update_mask path that is no field of the update is 4001 naming it, over REST and Connect; nothing changes", async () => {
      const { data } = await base();
      const rest = await patchReply(data.id, { update_mask: "bogus", description: "zz" });
      expect(rest.json).toStrictEqual(failure(4001, expect.stringContaining('update_mask: "bogus" is not a field of the update')));
      const connect = await send("POST", `${RPC}/UpdateEnvironmentConfig`, { body: { id: data.id, description: "zz", updateMask: "descripton" } });
      expect(connect.status).toBe(400);
      expect(connect.json.message).toContain('update_mask: "descripton" is not a field of the update');
      // A list in place of the mask's one string is 4001 spelling out its JSON form (it quoted protobuf-es's "Array(1)").
      const listed = await patchReply(data.id, { update_mask: ["description"], description: "zz" });
      const spelledOut = 'a field mask is one string of lowerCamelCase field names separated by commas, e.g. "description,environmentVariables"';
      expect(listed.json).toStrictEqual(failure(4001, expect.stringMatching(/^update_mask: .*Array\(1\)/)));
      expect(listed.json.message).toContain(spelledOut);
      const connectListed = await send("POST", `${RPC}/UpdateEnvironmentConfig`, { body: { id: data.id, description: "zz", updateMask: ["description"] } });
      expect([connectListed.status, connectListed.json.message]).toStrictEqual([400, expect.stringContaining(`updateMask: `)]);
      expect(connectListed.json.message).toContain(spelledOut);
      // snake_case names are refused with protobuf-es's reason; the example's lowerCamelCase form updates.
      const snake = await send("POST", `${RPC}/UpdateEnvironmentConfig`, { body: { id: data.id, description: "zz", updateMask: "description,environment_variables" } });
      expect([snake.status, snake.json.message]).toStrictEqual([400, expect.stringContaining("lowerCamelCase")]);
      expect(await get(data.id)).toStrictEqual(data);
      const camel = await send("POST", `${RPC}/UpdateEnvironmentConfig`, { body: { id: data.id, description: "zz", updateMask: "description,environmentVariables" } });
      expect(camel.status, JSON.stringify(camel.json)).toBe(200);
      expect(await get(data.id)).toMatchObject({ description: "zz", environment_variables: {} });
    });

    it("an id in a PATCH body beside the path's is 4001; a DELETE with a body (an etag, say) is 4001 and deletes nothing", async () => {
      const { data } = await base();
      const other = await create({ name: uniqueName("other-id") });
      const renamed = await patchReply(data.id, { id: other.id, description: "which one?" });
      expect(renamed.json).toStrictEqual(failure(4001, "id: given in the path and in the body; send it in the path only"));
      const deleted = await send("DELETE", `${BASE}/${encodeURIComponent(data.id)}`, { body: { etag: "stale" } });
      expect(deleted.json).toStrictEqual(failure(4001, expect.stringContaining("body: DELETE takes no body")));
      expect(await get(data.id)).toStrictEqual(data);
      expect(await get(other.id)).toStrictEqual(other);
    });

    it("a null in a PATCH body is a field not set: the field keeps its value, as over Connect (without a mask)", async () => {
      const data = await create({ name: uniqueName("nulls"), description: "keep me", runtime_config: { install: "make deps" }, environment_variables: { A: "1" } });
      const nulls = { description: null, runtime_config: null, environment_variables: null, secrets: null };
      const rest = await patchReply(data.id, { ...nulls, etag: data.etag });
      expect(rest.json, JSON.stringify(rest.json)).toMatchObject({ code: 0, data: { description: "keep me", runtime_config: { install: "make deps" }, environment_variables: { A: "1" } } });
      const connect = await send("POST", `${RPC}/UpdateEnvironmentConfig`, { body: { id: data.id, ...nulls } });
      expect(connect.status).toBe(200);
      const now = await get(data.id);
      expect([now.description, now.runtime_config.install, now.environment_variables]).toStrictEqual(["keep me", "make deps", { A: "1" }]);
      // Beside a field that is set, only that field changes.
      const one = await patchReply(data.id, { ...nulls, description: "changed" });
      expect(one.json).toMatchObject({ code: 0, data: { description: "changed", runtime_config: { install: "make deps" }, environment_variables: { A: "1" } } });
    });

    it("an update of an unknown id is 404 4041", async () => {
      const reply = await patchReply("env_missing", { description: "x" });
      expect(reply.status).toBe(404);
      expect(reply.json).toStrictEqual(failure(4041, 'environment config "env_missing" not found'));
    });
  });

  // ---------------------------------------------------------------------------------------------
  describe("delete", () => {
    it("deletes: get is then 404, the list no longer has it, the sealed secrets and data key are gone", async () => {
      const data = await create({ name: uniqueName("delete-me"), secrets: { TOKEN: secretValue() } });
      const reply = await deleteReply(data.id);
      expect(reply.status).toBe(200);
      expect(reply.json).toStrictEqual(success({}));
      expect((await getReply(data.id)).json).toStrictEqual(failure(4041, `environment config "${data.id}" not found`));
      const all = await listReply("?page_size=100");
      expect(all.json.data.items.map((c: any) => c.id)).not.toContain(data.id);
      const db = svc.database.db;
      expect(await db.selectFrom("environment_secret").select("key").where("environment_id", "=", data.id).execute()).toStrictEqual([]);
      expect(await db.selectFrom("environment_data_key").select("master_key_id").where("environment_id", "=", data.id).execute()).toStrictEqual([]);
      // the name is free again
      expect((await createReply({ name: data.name })).status).toBe(200);
    });

    it("a second delete and a delete of an unknown id are 404 4041", async () => {
      const data = await create({ name: uniqueName("delete-twice") });
      expect((await deleteReply(data.id)).status).toBe(200);
      const again = await deleteReply(data.id);
      expect(again.status).toBe(404);
      expect(again.json).toStrictEqual(failure(4041, `environment config "${data.id}" not found`));
      expect((await deleteReply("env_never_was")).json).toStrictEqual(failure(4041, 'environment config "env_never_was" not found'));
    });

    it("a delete with a stale etag is 409 4092; with the current one it deletes", async () => {
      const data = await create({ name: uniqueName("delete-etag") });
      const after = (await patchReply(data.id, { description: "changed" })).json.data;
      const stale = await deleteReply(data.id, undefined, `?etag=${encodeURIComponent(data.etag)}`);
      expect(stale.status).toBe(409);
      expect(stale.json).toStrictEqual(failure(4092, expect.stringContaining("etag")));
      expect(await get(data.id)).toStrictEqual(after);
      expect((await deleteReply(data.id, undefined, `?etag=${encodeURIComponent(after.etag)}`)).status).toBe(200);
    });
  });

  // ---------------------------------------------------------------------------------------------
  describe("supported versions", () => {
    it("lists all eight languages with their versions and the latest; the literal path wins over {id}", async () => {
      const reply = await send("GET", `${BASE}/supported_versions`, { token: readToken });
      expect(reply.status).toBe(200);
      expect(reply.json).toStrictEqual(success({ languages: SUPPORTED }));
    });
  });

  // ---------------------------------------------------------------------------------------------
  describe("startup plan", () => {
    it("install (stage 1, blocking, stop_on_failure), then start in the background, then every terminal in parallel", async () => {
      const secrets = { OPENAI_API_KEY: secretValue(), DB_PASSWORD: secretValue() };
      const data = await create({
        name: uniqueName("plan"),
        preinstalled_packages: { node_version: "22" },
        runtime_config: {
          install: "npm ci",
          start: "npm run dev",
          terminals: [
            { name: "worker", command: "npm run worker", description: "jobs" },
            { name: "db", command: "postgres", description: "" },
            { name: "tail", command: "tail -f app.log", description: "" },
          ],
        },
        environment_variables: { PORT: "3000", LOG_LEVEL: "info" },
        secrets,
      });
      const reply = await planReply(data.id, readToken);
      expect(reply.status).toBe(200);
      expect(reply.json).toStrictEqual(success({
        environment_config_id: data.id,
        packages: { ...LATEST, node_version: "22" },
        steps: [
          { stage: 1, kind: "install", name: "", command: "npm ci", blocking: true, background: false, stop_on_failure: true },
          { stage: 2, kind: "start", name: "", command: "npm run dev", blocking: false, background: true, stop_on_failure: false },
          { stage: 3, kind: "terminal", name: "worker", command: "npm run worker", blocking: false, background: true, stop_on_failure: false },
          { stage: 3, kind: "terminal", name: "db", command: "postgres", blocking: false, background: true, stop_on_failure: false },
          { stage: 3, kind: "terminal", name: "tail", command: "tail -f app.log", blocking: false, background: true, stop_on_failure: false },
        ],
        environment_variable_keys: ["LOG_LEVEL", "PORT"],
        secret_keys: ["DB_PASSWORD", "OPENAI_API_KEY"],
        network_policy: FIXED_POLICY,
      }));
      for (const value of Object.values(secrets)) expect(reply.text).not.toContain(value);
    });

    it("without install, start is stage 1 and the terminals stage 2; terminals alone are stage 1; no scripts, no steps", async () => {
      const noInstall = await create({ name: uniqueName("plan-no-install"), runtime_config: { start: "serve", terminals: terminals(2) } });
      expect((await planReply(noInstall.id)).json.data.steps).toStrictEqual([
        { stage: 1, kind: "start", name: "", command: "serve", blocking: false, background: true, stop_on_failure: false },
        { stage: 2, kind: "terminal", name: "term-0", command: "worker --id 0", blocking: false, background: true, stop_on_failure: false },
        { stage: 2, kind: "terminal", name: "term-1", command: "worker --id 1", blocking: false, background: true, stop_on_failure: false },
      ]);
      const onlyTerminals = await create({ name: uniqueName("plan-terminals"), runtime_config: { terminals: terminals(1) } });
      expect((await planReply(onlyTerminals.id)).json.data.steps).toStrictEqual([
        { stage: 1, kind: "terminal", name: "term-0", command: "worker --id 0", blocking: false, background: true, stop_on_failure: false },
      ]);
      const installOnly = await create({ name: uniqueName("plan-install"), runtime_config: { install: "make" } });
      expect((await planReply(installOnly.id)).json.data.steps).toStrictEqual([
        { stage: 1, kind: "install", name: "", command: "make", blocking: true, background: false, stop_on_failure: true },
      ]);
      const empty = await create({ name: uniqueName("plan-empty") });
      expect((await planReply(empty.id)).json).toStrictEqual(success({
        environment_config_id: empty.id, packages: LATEST, steps: [], environment_variable_keys: [], secret_keys: [], network_policy: FIXED_POLICY,
      }));
    });

    it("the plan of an unknown id is 404 4041", async () => {
      expect((await planReply("env_nothing")).json).toStrictEqual(failure(4041, 'environment config "env_nothing" not found'));
    });
  });

  // ---------------------------------------------------------------------------------------------
  describe("permissions and tenancy", () => {
    let config: any;
    beforeAll(async () => {
      config = await create({ name: uniqueName("guarded"), secrets: { GUARDED: secretValue() }, runtime_config: { install: "make" } });
    });

    it("environments:read can get, list, read supported versions and the startup plan", async () => {
      expect((await getReply(config.id, readToken)).json).toStrictEqual(success(config));
      expect((await listReply("?page_size=100", readToken)).status).toBe(200);
      expect((await send("GET", `${BASE}/supported_versions`, { token: readToken })).status).toBe(200);
      expect((await planReply(config.id, readToken)).status).toBe(200);
    });

    it("environments:read cannot create, update or delete (403 30017); nothing changes", async () => {
      const denied = failure(30017, "permission denied: this operation needs environments:write");
      const created = await createReply({ name: uniqueName("read-only-create") }, readToken);
      expect(created.status).toBe(403);
      expect(created.json).toStrictEqual(denied);
      const updated = await patchReply(config.id, { description: "nope", secrets: { GUARDED: secretValue() } }, readToken);
      expect(updated.status).toBe(403);
      expect(updated.json).toStrictEqual(denied);
      const deleted = await deleteReply(config.id, readToken);
      expect(deleted.status).toBe(403);
      expect(deleted.json).toStrictEqual(denied);
      expect(await get(config.id)).toStrictEqual(config);
    });

    it("environments:write alone cannot read (403 30017 naming environments:read)", async () => {
      const denied = failure(30017, "permission denied: this operation needs environments:read");
      expect((await getReply(config.id, writeToken)).json).toStrictEqual(denied);
      expect((await listReply("", writeToken)).json).toStrictEqual(denied);
      expect((await send("GET", `${BASE}/supported_versions`, { token: writeToken })).json).toStrictEqual(denied);
      expect((await planReply(config.id, writeToken)).json).toStrictEqual(denied);
    });

    it("a token without environment permissions gets 30017 everywhere", async () => {
      const other = await svc.token(["statistics:read", "departments:read"]);
      for (const reply of [
        await getReply(config.id, other),
        await listReply("", other),
        await send("GET", `${BASE}/supported_versions`, { token: other }),
        await planReply(config.id, other),
        await createReply({ name: uniqueName("no-perm") }, other),
        await patchReply(config.id, { description: "x" }, other),
        await deleteReply(config.id, other),
      ]) {
        expect(reply.status).toBe(403);
        expect(reply.json).toStrictEqual(failure(30017, expect.stringContaining("environments:")));
      }
    });

    it("another enterprise's configuration is 404 for get, update, delete and the startup plan; its list leaves it out", async () => {
      const notFound = failure(4041, `environment config "${config.id}" not found`);
      expect((await getReply(config.id, globexToken)).json).toStrictEqual(notFound);
      expect((await patchReply(config.id, { description: "hijack", secrets: { GUARDED: secretValue() } }, globexToken)).json).toStrictEqual(notFound);
      expect((await patchReply(config.id, { description: "hijack", etag: config.etag }, globexToken)).json).toStrictEqual(notFound);
      expect((await deleteReply(config.id, globexToken)).json).toStrictEqual(notFound);
      expect((await planReply(config.id, globexToken)).json).toStrictEqual(notFound);
      const globexList = await listReply("?page_size=100", globexToken);
      expect(globexList.json.data.items.map((c: any) => c.id)).not.toContain(config.id);
      // untouched
      expect(await get(config.id)).toStrictEqual(config);
    });

    it("a missing or bad token is 401 1002 on every route", async () => {
      for (const as of [null, "garbage"]) {
        for (const reply of [
          await getReply(config.id, as),
          await listReply("", as),
          await send("GET", `${BASE}/supported_versions`, { token: as }),
          await planReply(config.id, as),
          await createReply({ name: uniqueName("no-token") }, as),
          await patchReply(config.id, { description: "x" }, as),
          await deleteReply(config.id, as),
        ]) {
          expect(reply.status).toBe(401);
          expect(reply.json).toStrictEqual(failure(1002));
        }
      }
      expect(await get(config.id)).toStrictEqual(config);
    });
  });

  // ---------------------------------------------------------------------------------------------
  describe("over the Connect protocol", () => {
    const captureIds: Interceptor = (next) => async (req) => {
      try {
        const res = await next(req);
        requestIds.push(res.header.get("x-request-id") ?? "");
        return res;
      } catch (error) {
        const e = ConnectError.from(error);
        requestIds.push(e.metadata.get("x-request-id") ?? "");
        throw error;
      }
    };
    const client = () => createClient(EnvironmentConfigService, createConnectTransport({ baseUrl: svc.baseUrl, httpVersion: "1.1", interceptors: [captureIds] }));
    const auth = (as = token) => ({ headers: { authorization: `Bearer ${as}` } });
    async function failureOf(promise: Promise<unknown>): Promise<ConnectError> {
      const error = await promise.then(() => undefined, (e: unknown) => ConnectError.from(e));
      expect(error).toBeInstanceOf(ConnectError);
      connectTexts.push(error!.message, ...error!.findDetails(ErrorDetailSchema).map((d) => d.message));
      return error!;
    }
    const details = (error: ConnectError) => error.findDetails(ErrorDetailSchema).map((d) => ({ code: d.code, message: d.message }));
    const remember = <T>(value: T): T => {
      connectTexts.push(JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? String(v) : v)));
      return value;
    };

    it("creates, gets and lists with the same fields as REST", async () => {
      const secrets = { Z_TOKEN: secretValue(), A_TOKEN: secretValue() };
      const name = uniqueName("connect");
      const created = remember(await client().createEnvironmentConfig({
        name,
        description: "over connect",
        preinstalledPackages: { nodeVersion: "22" },
        runtimeConfig: { install: "npm ci", start: "npm start", terminals: [{ name: "w", command: "npm run w", description: "" }] },
        environmentVariables: { MODE: "dev" },
        secrets,
      }, auth()));
      expect(created.name).toBe(name);
      expect(created.secretKeys).toStrictEqual(["A_TOKEN", "Z_TOKEN"]);
      expect(created.preinstalledPackages?.nodeVersion).toBe("22");
      expect(created.preinstalledPackages?.pythonVersion).toBeUndefined();
      expect(created.resolvedPackages?.pythonVersion).toBe("3.14");
      expect(created.resolvedPackages?.nodeVersion).toBe("22");
      expect(created.environmentVariables).toStrictEqual({ MODE: "dev" });
      expect(created.networkPolicy?.mode).toBe(1);
      expect(created.networkPolicy?.allowlistPolicy).toBe(0);
      expect(created.networkPolicy?.commonDependencies).toStrictEqual(ALL_TEN_SOURCES);
      expect(created.etag).not.toBe("");

      const got = remember(await client().getEnvironmentConfig({ id: created.id }, auth(readToken)));
      expect(got.etag).toBe(created.etag);
      expect(got.secretKeys).toStrictEqual(["A_TOKEN", "Z_TOKEN"]);
      const rest = await get(created.id);
      expect(rest).toStrictEqual(record({
        id: created.id, name, description: "over connect", packages: { node_version: "22" },
        runtime: { install: "npm ci", start: "npm start", terminals: [{ name: "w", command: "npm run w", description: "" }] },
        env: { MODE: "dev" }, secretKeys: ["A_TOKEN", "Z_TOKEN"],
      }));
      expect(rest.etag).toBe(created.etag);
      expect(await configs.revealSecrets("acme", created.id)).toStrictEqual(secrets);
    });

    it("an update mask updates only the named fields, even to an empty value; secrets merge by key", async () => {
      const first = secretValue();
      const created = await client().createEnvironmentConfig({ name: uniqueName("connect-update"), description: "keep?", environmentVariables: { A: "1" }, secrets: { ONE: first } }, auth());
      const cleared = remember(await client().updateEnvironmentConfig({ id: created.id, description: "", environmentVariables: { IGNORED: "x" }, updateMask: { paths: ["description"] } }, auth()));
      expect(cleared.description).toBe("");
      expect(cleared.environmentVariables).toStrictEqual({ A: "1" });
      const two = secretValue();
      const merged = remember(await client().updateEnvironmentConfig({ id: created.id, secrets: { TWO: two } }, auth()));
      expect(merged.secretKeys).toStrictEqual(["ONE", "TWO"]);
      expect(merged.description).toBe("");
      expect(await configs.revealSecrets("acme", created.id)).toStrictEqual({ ONE: first, TWO: two });
      const stale = await failureOf(client().updateEnvironmentConfig({ id: created.id, description: "x", etag: created.etag }, auth()));
      expect(stale.code).toBe(Code.Aborted);
      expect(details(stale)).toStrictEqual([{ code: 4092, message: "etag: the environment config changed since it was read; get it again and retry" }]);
    });

    it("limits: invalid_argument carrying 4001 and the field and limit", async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ secrets: secretMap(51) }, "secrets: 51 keys > 50"],
        [{ environmentVariables: variables(101) }, "environment_variables: 101 keys > 100"],
        [{ runtimeConfig: { terminals: terminals(11) } }, "runtime_config.terminals: 11 terminals > 10"],
        [{ runtimeConfig: { install: "é".repeat(5120) + "a" } }, "runtime_config.install: 10241 bytes > 10240 (10 KB of UTF-8)"],
        [{ runtimeConfig: { terminals: [{ name: "t", command: "c".repeat(4097), description: "" }] } }, "runtime_config.terminals[0].command: 4097 bytes > 4096 (4 KB of UTF-8)"],
        [{ name: "n".repeat(65) }, "name: 65 characters > 64"],
        [{ secrets: { "has-dash": secretValue() } }, `secrets: key "has-dash" must match ${KEY_RULE}`],
        [{ preinstalledPackages: { swiftVersion: "5.9" } }, 'preinstalled_packages.swift_version: "5.9" is not supported; supported Swift versions: 5.10, 6.1, 6.2'],
        [{ networkPolicy: { mode: 1, allowlistPolicy: 0, commonDependencies: ["npm"] } }, expect.stringContaining("network_policy: the policy is fixed") as unknown as string],
      ];
      for (const [fields, message] of cases) {
        const error = await failureOf(client().createEnvironmentConfig({ name: uniqueName("connect-limit"), ...fields }, auth()));
        expect(error.code).toBe(Code.InvalidArgument);
        expect(error.rawMessage).toStrictEqual(message);
        expect(details(error)).toStrictEqual([{ code: 4001, message }]);
      }
      // and the maxima pass
      const ok = remember(await client().createEnvironmentConfig({
        name: "m".repeat(64), secrets: secretMap(50), environmentVariables: variables(100),
        runtimeConfig: { install: "é".repeat(5120), start: "s".repeat(10240), terminals: terminals(10).map((t) => ({ ...t, command: "c".repeat(4096) })) },
        networkPolicy: { mode: 1, allowlistPolicy: 0, commonDependencies: ALL_TEN_SOURCES },
      }, auth()));
      expect(ok.secretKeys).toHaveLength(50);
    });

    it("a taken name is already_exists carrying 4091; unknown is not_found 4041; read-only is permission_denied 30017; no token is unauthenticated 1002", async () => {
      const name = uniqueName("connect-taken");
      const created = await client().createEnvironmentConfig({ name }, auth());
      const taken = await failureOf(client().createEnvironmentConfig({ name }, auth()));
      expect(taken.code).toBe(Code.AlreadyExists);
      expect(details(taken).map((d) => d.code)).toStrictEqual([4091]);

      const missing = await failureOf(client().getEnvironmentConfig({ id: "env_connect_missing" }, auth()));
      expect(missing.code).toBe(Code.NotFound);
      expect(details(missing)).toStrictEqual([{ code: 4041, message: 'environment config "env_connect_missing" not found' }]);

      for (const call of [
        () => client().getEnvironmentConfig({ id: created.id }, auth(globexToken)),
        () => client().updateEnvironmentConfig({ id: created.id, description: "x" }, auth(globexToken)),
        () => client().deleteEnvironmentConfig({ id: created.id }, auth(globexToken)),
        () => client().getStartupPlan({ id: created.id }, auth(globexToken)),
      ]) {
        const error = await failureOf(call());
        expect(error.code).toBe(Code.NotFound);
        expect(details(error).map((d) => d.code)).toStrictEqual([4041]);
      }

      const denied = await failureOf(client().deleteEnvironmentConfig({ id: created.id }, auth(readToken)));
      expect(denied.code).toBe(Code.PermissionDenied);
      expect(details(denied)).toStrictEqual([{ code: 30017, message: "permission denied: this operation needs environments:write" }]);

      const anonymous = await failureOf(client().listEnvironmentConfigs({}));
      expect(anonymous.code).toBe(Code.Unauthenticated);
      expect(details(anonymous).map((d) => d.code)).toStrictEqual([1002]);

      expect((await client().getEnvironmentConfig({ id: created.id }, auth(readToken))).name).toBe(name);
      await client().deleteEnvironmentConfig({ id: created.id }, auth());
      expect((await failureOf(client().getEnvironmentConfig({ id: created.id }, auth()))).code).toBe(Code.NotFound);
    });

    it("an unknown field in a binary protobuf body is 4001 naming its number, as an unknown JSON field is; nothing is created", async () => {
      const name = uniqueName("binary-unknown");
      const known = toBinary(CreateEnvironmentConfigRequestSchema, createMessage(CreateEnvironmentConfigRequestSchema, { name }));
      const cases: Array<[Buffer, string]> = [
        // Field 99, varint 1, at the top level.
        [Buffer.from([0x98, 0x06, 0x01]), "field number 99: not a field of CreateEnvironmentConfigRequest"],
        // runtime_config (field 4, 3 bytes) holding field 15, varint 1.
        [Buffer.from([0x22, 0x02, 0x78, 0x01]), "runtime_config.field number 15: not a field of RuntimeConfig"],
      ];
      for (const [extra, named] of cases) {
        const res = await fetch(`${svc.baseUrl}${RPC}/CreateEnvironmentConfig`, {
          method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/proto" }, body: Buffer.concat([known, extra]),
        });
        expect(res.status).toBe(400);
        expect(((await res.json()) as { message: string }).message).toBe(`${named} in this service's schema; unknown fields are refused`);
      }
      expect((await listReply("?page_size=100")).json.data.items.map((item: any) => item.name)).not.toContain(name);
    });

    it("supported versions and the startup plan", async () => {
      const versions = remember(await client().getSupportedVersions({}, auth(readToken)));
      expect(versions.languages.map((l) => ({ field: l.field, language: l.language, versions: l.versions, latest: l.latest }))).toStrictEqual(SUPPORTED);
      const created = await client().createEnvironmentConfig({
        name: uniqueName("connect-plan"), secrets: { KEY: secretValue() },
        runtimeConfig: { install: "i", start: "s", terminals: [{ name: "a", command: "ta", description: "" }, { name: "b", command: "tb", description: "" }] },
      }, auth());
      const plan = remember(await client().getStartupPlan({ id: created.id }, auth(readToken)));
      expect(plan.steps.map((s) => [s.stage, s.kind, s.name, s.command, s.blocking, s.background, s.stopOnFailure])).toStrictEqual([
        [1, "install", "", "i", true, false, true],
        [2, "start", "", "s", false, true, false],
        [3, "terminal", "a", "ta", false, true, false],
        [3, "terminal", "b", "tb", false, true, false],
      ]);
      expect(plan.secretKeys).toStrictEqual(["KEY"]);
    });

    it("container_image over Connect JSON is rejected as invalid_argument carrying 4001", async () => {
      const reply = await send("POST", `${RPC}/CreateEnvironmentConfig`, { body: { name: uniqueName("connect-image"), container_image: "ubuntu:24.04" } });
      expect(reply.status).toBe(400);
      expect(reply.json.code).toBe("invalid_argument");
      expect(reply.json.message).toContain("container_image");
      // the RPC transports carry the same number as an error detail
      expect(reply.json.details?.map((d: any) => d.debug?.code)).toStrictEqual([4001]);
      // Its request id under the proto's field name, as on the paths connect-es answers (a compressed JSON body, refused unread).
      expect(reply.json.details[0].debug.request_id).toBe(reply.requestId);
      const compressed = await fetch(`${svc.baseUrl}${RPC}/CreateEnvironmentConfig`, {
        method: "POST", body: gzipSync(JSON.stringify({ name: uniqueName("connect-gzip") })),
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "content-encoding": "gzip" },
      });
      expect((await compressed.json() as any).details[0].debug.request_id).toBe(compressed.headers.get("x-request-id"));
    });
  });

  // ---------------------------------------------------------------------------------------------
  describe("secret values never leave the server", () => {
    it("error paths that carry secrets answer without their values", async () => {
      const value = secretValue();
      const existing = await create({ name: uniqueName("leak-target"), environment_variables: { PLAIN: "p" }, secrets: { KEPT: secretValue() } });
      const cases: [Reply, number][] = [
        [await createReply({ name: uniqueName("leak"), secrets: { ...secretMap(51), LAST: value } }), 400],
        [await createReply({ name: uniqueName("leak"), secrets: { LONG: `${value}${"x".repeat(40_000)}` } }), 400],
        [await createReply({ name: uniqueName("leak"), secrets: { "bad-key": value } }), 400],
        [await createReply({ name: uniqueName("leak"), environment_variables: { SAME: "plain" }, secrets: { SAME: value } }), 400],
        [await createReply({ name: uniqueName("leak"), secrets: { K: [value] } }), 400],
        [await createReply({ name: uniqueName("leak"), secrets: { K: { nested: value } } }), 400],
        [await createReply({ name: uniqueName("leak"), secrets: value }), 400],
        [await createReply({ name: uniqueName("leak"), secrets: { K: value }, container_image: "x" }), 400],
        [await createReply({ name: existing.name, secrets: { K: value } }), 409],
        [await createReply({ name: uniqueName("leak"), secrets: { K: value } }, readToken), 403],
        [await createReply({ name: uniqueName("leak"), secrets: { K: value } }, null), 401],
        [await send("POST", BASE, { raw: `{"name":"leak","secrets":{"K":"${value}"`, token }), 400], // truncated JSON
        [await send("POST", BASE, { raw: `{"name":"leak","secrets":{"K":${value}}}`, token }), 400], // value unquoted
        [await send("POST", BASE, { raw: JSON.stringify({ name: "leak", secrets: { K: value } }), contentType: "text/plain" }), 415],
        [await send("POST", BASE, { raw: JSON.stringify({ name: "leak", secrets: { K: value }, pad: "p".repeat(1024 * 1024) }) }), 413],
        [await patchReply(existing.id, { secrets: { K: value }, etag: "stale" }), 409],
        [await patchReply(existing.id, { secrets: { PLAIN: value } }), 400],
        [await patchReply(existing.id, { secrets: { K: value }, remove_secret_keys: ["K"] }), 400],
        [await patchReply(existing.id, { secrets: { K: value } }, globexToken), 404],
        [await send("POST", `${RPC}/CreateEnvironmentConfig`, { body: { name: uniqueName("leak"), secrets: { K: value, "bad-key": value } } }), 400],
        [await send("POST", `${RPC}/CreateEnvironmentConfig`, { raw: `{"name":"leak","secrets":{"K":"${value}"` }), 400],
      ];
      expect(cases.map(([reply]) => reply.status)).toStrictEqual(cases.map(([, status]) => status));
      for (const [reply] of cases) expect(reply.text).not.toContain(value);
      // the stored configuration is untouched
      expect(await get(existing.id)).toStrictEqual(existing);
    });

    it("a non-string secret value is not echoed in an error, over REST or Connect JSON", async () => {
      // a numeric PIN sent without quotes is still the secret's value
      const pin = `9${range(11).map(() => Math.floor(Math.random() * 10)).join("")}`;
      const rest = await send("POST", BASE, { raw: `{"name":"${uniqueName("pin")}","secrets":{"PIN":${pin}}}` });
      expect(rest.json).toStrictEqual(failure(4001, "secrets.PIN: expected a string"));
      const rpc = await send("POST", `${RPC}/CreateEnvironmentConfig`, { raw: `{"name":"${uniqueName("pin")}","secrets":{"PIN":${pin}}}` });
      expect(rpc.status).toBe(400);
      expect(rpc.json.code).toBe("invalid_argument");
      expect(rpc.text).not.toContain(pin);
      await sleep(50);
      expect(svc.logs.filter((line) => line.includes(pin))).toStrictEqual([]);
    });

    it("JSON that connect-es would decode (compressed Connect JSON, gRPC-Web with the JSON codec) is refused unread: 4001, no value echoed", async () => {
      const pin = `9${range(11).map(() => Math.floor(Math.random() * 10)).join("")}`;
      const json = `{"name":"${uniqueName("pin")}","secrets":{"PIN":${pin}}}`;
      const post = (contentType: string, body: Uint8Array, extra: Record<string, string> = {}) => fetch(`${svc.baseUrl}${RPC}/CreateEnvironmentConfig`, {
        method: "POST", body, headers: { authorization: `Bearer ${token}`, "content-type": contentType, ...extra },
      });
      const gzipped = await post("application/json", gzipSync(json), { "content-encoding": "gzip" });
      const connectText = await gzipped.text();
      expect(gzipped.status).toBe(400);
      expect(JSON.parse(connectText)).toMatchObject({ code: "invalid_argument", message: expect.stringContaining("JSON bodies are taken uncompressed") });
      expect(connectText).not.toContain(pin);
      const message = Buffer.from(json);
      const envelope = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), message]);
      envelope.writeUInt32BE(message.length, 1);
      const grpcWeb = await post("application/grpc-web+json", envelope, { "x-grpc-web": "1" });
      const grpcWebText = `${[...grpcWeb.headers].join(";")}${Buffer.from(await grpcWeb.arrayBuffer()).toString("latin1")}`;
      expect(grpcWebText).toContain("grpc-status: 3\r\n");
      expect(decodeURIComponent(grpcWebText.split("grpc-message: ")[1]!.split("\r\n")[0]!)).toContain("JSON bodies are taken uncompressed");
      expect(grpcWebText).not.toContain(pin);
      await sleep(50);
      expect(svc.logs.filter((line) => line.includes(pin))).toStrictEqual([]);
    });

    it("a JSON number is not a string whatever its length: a 16-digit secret value is refused like a 4-digit one (REST)", async () => {
      const short = await send("POST", BASE, { raw: `{"name":"${uniqueName("num")}","secrets":{"PIN":1234}}` });
      expect(short.json).toStrictEqual(failure(4001, "secrets.PIN: expected a string"));
      const long = await send("POST", BASE, { raw: `{"name":"${uniqueName("num")}","secrets":{"PIN":9123456789012345}}` });
      expect(long.json).toStrictEqual(failure(4001, "secrets.PIN: expected a string"));
    });

    it("no response body, Connect message or server log line ever held a secret value", async () => {
      expect(secretCount).toBeGreaterThan(100); // the tests above did send secrets
      const leaking = replies.filter((r) => r.text.includes(MARK)).map((r) => r.text.slice(0, 300));
      expect(leaking).toStrictEqual([]);
      expect(connectTexts.filter((t) => t.includes(MARK))).toStrictEqual([]);
      // the access log line of a request is written when its response closes: wait for all of them
      for (let i = 0; i < 200; i++) {
        const logged = svc.logs.join("\n");
        if (requestIds.every((id) => id === "" || logged.includes(id))) break;
        await sleep(10);
      }
      const logged = svc.logs.join("\n");
      expect(requestIds.filter((id) => id !== "" && !logged.includes(id))).toStrictEqual([]);
      expect(svc.logs.filter((line) => line.includes(MARK))).toStrictEqual([]);
      expect(svc.logs.filter((line) => line.includes("sk-live-"))).toStrictEqual([]);
    });
  });
});
