// The enterprise-admin command line (docs/cli.md): the Command tree, built by buildProgram()
// for run-cli.ts to run and for scripts/render-cli-doc.ts to document. Each command opens the database
// named by --db (else DATABASE_URL, else ./data/enterprise-admin.sqlite), migrates it, does one job,
// and prints its result through output.ts. Commands write only to the streams of their CliIo and read
// only its environment, so the command line runs in-process as well as in its own process.
import { existsSync, readFileSync } from "node:fs";
import { Command, Option } from "commander";
import { loadConfig, loadServeConfig, usageImportTuning } from "../config.js";
import { MAX_ACCESS_TOKEN_TTL_SECONDS, parseDuration } from "../domain/credentials.js";
import { parseDirectoryFile } from "../domain/directory-file.js";
import { invalidParameter } from "../domain/errors.js";
import { PERMISSIONS, parsePermissions } from "../domain/permissions.js";
import { AccessAdmin } from "../operations/access-admin.js";
import { importDirectory } from "../operations/import-directory.js";
import { importUsage } from "../operations/import-usage.js";
import { readInputFile } from "../operations/input-file.js";
import { rebuildUsage } from "../operations/rebuild-usage.js";
import { rotateMasterKey } from "../operations/rotate-master-key.js";
import { decodeKey, KeyFileMissingError, loadLocalKeyProvider, type LocalKeyProvider } from "../keys/local-key-provider.js";
import { keyRingStatus, verifyDataKeys } from "../operations/inspect-master-keys.js";
import { EnvironmentConfigRepository } from "../storage/environment-config-repository.js";
import { UsageRepository } from "../storage/usage-repository.js";
import { EXPORT_BAR, IMPORT_BAR, progressBar, REBUILD_BAR } from "./progress-bar.js";
import { exportUsageFile } from "./export-usage.js";
import { RECORD_FORMATS } from "../rest/record-formats.js";
import { decodeUtf8Body } from "../rest/utf8-body.js";
import { AuthRepository } from "../storage/auth-repository.js";
import { isPostgresUrl, migrateToLatest, openDatabase, sqliteFilePath, type Database } from "../storage/database.js";
import { BadSetting } from "../env-number.js";
import { DirectoryRepository } from "../storage/directory-repository.js";
import { DEMO_ENTERPRISE_ID, demoDirectory } from "../demo/directory.js";
import { DEMO_USAGE_DAYS, demoToday, demoUsageEvents } from "../demo/usage.js";
import { demoEnvironments } from "../demo/environments.js";
import { EnvironmentConfigs } from "../operations/environment-configs.js";
import { checkUsageEvent } from "../domain/usage-event.js";
import { recordUsage } from "../operations/record-usage.js";
import { storeUnreachableOf } from "../storage/store-unreachable.js";
import { outputOf } from "./output.js";
import { processIo, type CliIo } from "./cli-io.js";
import { ReportedFailure } from "./cli-errors.js";

const dbOption = () => new Option("--db <url>", "database: a SQLite file path or file: URL, or postgres://… (default: $DATABASE_URL, else ./data/enterprise-admin.sqlite)");

async function withDatabase<T>(io: CliIo, url: string | undefined, work: (database: Database) => Promise<T>, migrate = true): Promise<T> {
  const database = openDatabase(loadConfig({ db: url }, io.env).databaseUrl, { env: io.env });
  const made = database.createdDirectories;
  if (made.length > 0) io.stderr.write(`created ${made.length === 1 ? "directory" : "directories"} ${made.join(", ")} for the database ${database.location}\n`);
  try {
    if (migrate) await migrateToLatest(database);
    return await work(database);
  } catch (error) {
    // A full disk, a busy store or one that cannot be reached is said as such, with the store's
    // location, not as the driver's words (or the name of the migration that met it) alone.
    throw storeUnreachableOf(error, database.location) ?? database.faultOf(error) ?? error;
  } finally {
    await database.close();
  }
}

const accessAdmin = (database: Database) =>
  new AccessAdmin(new AuthRepository(database), new DirectoryRepository(database.db));

/**
 * `create`: whether a missing key file is created (seed and rotate) or an error (commands that only read); those also refuse a
 * SQLite file that is not there, rather than make an empty store and report on it (a mistyped --db would verify "ok").
 */
async function withKeys<T>(io: CliIo, url: string | undefined, create: boolean,
  work: (repository: EnvironmentConfigRepository, keys: LocalKeyProvider, database: Database) => Promise<T>) {
  const databaseUrl = loadConfig({ db: url }, io.env).databaseUrl;
  if (!create && !isPostgresUrl(databaseUrl) && !existsSync(sqliteFilePath(databaseUrl))) {
    throw new BadSetting(`--db/DATABASE_URL: no database at ${sqliteFilePath(databaseUrl)}`);
  }
  return withDatabase(io, url, async (database) => {
    const repository = new EnvironmentConfigRepository(database);
    return work(repository, await loadLocalKeyProvider({ databaseUrl, env: io.env, create, storeKeyId: await repository.currentMasterKey() }), database);
  });
}

/** The new key of --new-key-file or --new-key, strictly decoded; the error never quotes it. */
async function newKeyOption(opts: { newKey?: string; newKeyFile?: string }): Promise<Buffer | undefined> {
  if (opts.newKey !== undefined && opts.newKeyFile !== undefined) throw invalidParameter("--new-key and --new-key-file: pass one of them, not both");
  // A file that cannot be read is said by main.ts like every other (its path and why), outside the decoding's errors.
  const fileText = opts.newKeyFile === undefined ? undefined : (await readInputFile(opts.newKeyFile)).toString("utf8");
  try {
    if (fileText !== undefined) return decodeKey(fileText, `--new-key-file: ${opts.newKeyFile}`);
    if (opts.newKey !== undefined) return decodeKey(opts.newKey, "--new-key");
  } catch (error) {
    throw invalidParameter((error as Error).message);
  }
  return undefined;
}

const packageVersion = (): string =>
  (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;

/**
 * The enterprise-admin command tree; a new one each call (commander keeps parse state on it). Commander's
 * own output (help, version, usage errors) goes to `io` too, and it throws a CommanderError where it would
 * exit the process.
 */
export function buildProgram(io: CliIo = processIo()): Command {
  const program = new Command("enterprise-admin")
    // Before any subcommand is added: each one copies these settings from its parent.
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.stdout.write(text), writeErr: (text) => io.stderr.write(text) })
    .description("Enterprise Admin Service: serve the API and administer its data")
    .version(packageVersion(), "-V, --version", "print the version (package.json) and exit")
    .helpOption("-h, --help", "print the help of the program or of a command")
    .option("--json", "print results as JSON (the default when stdout is not a terminal; else tables)")
    .configureHelp({ showGlobalOptions: true })
    .showHelpAfterError();

  program.command("serve").description("migrate the database, then serve every transport on one port")
    .option("--port <n>", "port (default: $PORT, else 8080)")
    .option("--host <addr>", "address to bind (default: $HOST, else 127.0.0.1)")
    .addOption(dbOption())
    .action(async (opts) => {
      // The server's modules (connect, protobuf, the REST facade, metrics) load for `serve` alone:
      // every other command starts without them, a quarter sooner.
      const { serveUntilSignal } = await import("../main.js");
      await serveUntilSignal(loadServeConfig({ port: opts.port, host: opts.host, db: opts.db }, io.env), io.env, io.stderr);
    });

  program.command("migrate").description("apply pending migrations").addOption(dbOption())
    .action(async (opts, command: Command) => {
      const applied = await withDatabase(io, opts.db, async (database) => migrateToLatest(database), false);
      outputOf(command, io.stdout).result({ applied });
    });

  program.command("seed").description("load demo data and print an access token with every permission (alone, unless --json)")
    .requiredOption("--demo", `the demo enterprise: departments, members, ${DEMO_USAGE_DAYS} days of usage up to --as-of, two environment configs`)
    .option("--as-of <date>", "the demo's last day of usage, YYYY-MM-DD, included whole; each day's usage depends on its date alone (default: today in Asia/Shanghai)")
    .addOption(dbOption())
    .action(async (opts, command: Command) => {
      const asOf: string = opts.asOf ?? demoToday();
      const raws = demoUsageEvents(asOf);
      // The keys first: a key source that cannot serve this store stops the seed before it writes anything.
      const { summary, usage, created, token } = await withKeys(io, opts.db, true, async (repository, keys, database) => {
        const environments = new EnvironmentConfigs(repository, keys);
        const summary = await importDirectory(database, demoDirectory);
        const events = raws.map((raw, i) => ({ event: checkUsageEvent(raw, `demo event ${i}`), where: `demo event ${i}` }));
        const usage = await recordUsage(new UsageRepository(database), DEMO_ENTERPRISE_ID, events);
        const existing = new Set((await environments.list(DEMO_ENTERPRISE_ID, 100, "")).items.map((item) => item.row.name));
        const created = demoEnvironments.filter((config) => !existing.has(config.name!));
        for (const config of created) await environments.create(DEMO_ENTERPRISE_ID, config);
        return { summary, usage, created, token: await accessAdmin(database).createToken(DEMO_ENTERPRISE_ID, [...PERMISSIONS], 7 * 86400) };
      });
      io.stderr.write(`seeded enterprise "${summary.enterprise_id}": ${summary.departments} departments, ${summary.members} members, ` +
        `${usage.recorded} new usage events over the ${DEMO_USAGE_DAYS} days up to ${asOf}, ${created.length} new environment configs\n`);
      io.stderr.write("access token with every permission (valid 7 days):\n");
      outputOf(command, io.stdout).value(token.accessToken, {
        enterprise_id: summary.enterprise_id, departments: summary.departments, members: summary.members, as_of: asOf, days: DEMO_USAGE_DAYS,
        usage_events: raws.length, recorded: usage.recorded, environment_configs_created: created.length,
        access_token: token.accessToken, token_id: token.tokenId, expire: token.expire,
      });
    });

  const importCommand = program.command("import").description("load data files");
  importCommand.command("directory").argument("<file>", "directory JSON file (docs/file-formats.md)")
    .description("upsert one enterprise, its departments and members; idempotent; all or nothing")
    .option("--prune", "also remove the departments and members absent from the file (members become former members: their usage history stays)")
    .option("--dry-run", "print what the import would do (removals included), write nothing")
    .addOption(dbOption())
    .action(async (file: string, opts, command: Command) => {
      // Bytes that are not UTF-8 become lone surrogates, which the file's rules refuse by field, rather than U+FFFD stored in their place.
      const parsed = parseDirectoryFile(decodeUtf8Body(await readInputFile(file)));
      const summary = await withDatabase(io, opts.db, (database) => importDirectory(database, parsed, { prune: opts.prune, dryRun: opts.dryRun }));
      outputOf(command, io.stdout).result(summary);
    });

  importCommand.command("usage").argument("<file>", "NDJSON usage events, one per line (docs/file-formats.md)")
    .description("load usage events; idempotent by event_id; progress bar on a TTY; checks the whole file before writing, then commits in short chunks (re-run after a crash to complete)")
    .requiredOption("--enterprise <id>", "enterprise id")
    .addOption(dbOption())
    .action(async (file: string, opts, command: Command) => {
      const summary = await withDatabase(io, opts.db, (database) =>
        importUsage(new UsageRepository(database), opts.enterprise, file, io.stderr.isTTY ? progressBar(io.stderr, IMPORT_BAR) : undefined, usageImportTuning(io.env)));
      outputOf(command, io.stdout).result(summary);
    });

  const exportCommand = program.command("export").description("write data files");
  exportCommand.command("usage")
    .description("rows per (local date, member, model) with usage, in date order, as CSV or NDJSON (the REST export's formats); progress bar on a TTY")
    .requiredOption("--enterprise <id>", "enterprise id")
    .requiredOption("--from <date>", "first local date, YYYY-MM-DD (inclusive)")
    .requiredOption("--to <date>", "last local date, YYYY-MM-DD (inclusive)")
    .option("--time-zone <tz>", "IANA time zone of the dates (default: the enterprise's)")
    .option("--format <format>", `file format: ${RECORD_FORMATS.join(" or ")}`, "csv")
    .option("--out <file>", "write to this file (complete or not at all; new, or a regular file, never a link or a device, whose permission bits it keeps) instead of stdout")
    .addOption(dbOption())
    .action(async (opts, command: Command) => {
      // Ctrl-C or a SIGTERM stops the export cleanly: the partial file is removed, the store closed.
      const stopped = new AbortController();
      const stop = (signal: NodeJS.Signals) => stopped.abort(signal);
      process.once("SIGINT", stop).once("SIGTERM", stop);
      const summary = await withDatabase(io, opts.db, (database) => exportUsageFile(database,
        { enterprise: opts.enterprise, from: opts.from, to: opts.to, timeZone: opts.timeZone, format: opts.format, out: opts.out },
        io.stdout, io.stderr.isTTY ? progressBar(io.stderr, EXPORT_BAR) : undefined, stopped.signal))
        .finally(() => process.off("SIGINT", stop).off("SIGTERM", stop));
      // stdout may be the export itself: the summary goes to stderr.
      outputOf(command, io.stderr).result(summary);
    });

  program.command("usage").description("the stored usage")
    .command("rebuild")
    .description("recompute an enterprise's pre-aggregated usage from its raw events (the recovery tool); safe while servers run, whose ingestion waits for it; progress bar on a TTY")
    .requiredOption("--enterprise <id>", "enterprise id")
    .addOption(dbOption())
    .action(async (opts, command: Command) => {
      const summary = await withDatabase(io, opts.db, (database) =>
        rebuildUsage(new UsageRepository(database), opts.enterprise, io.stderr.isTTY ? progressBar(io.stderr, REBUILD_BAR) : undefined));
      outputOf(command, io.stdout).result(summary);
    });

  const appCommand = program.command("app").description("enterprise apps (app_id/app_secret)");
  appCommand.command("create").description("create an app and print its app_id and app_secret")
    .requiredOption("--enterprise <id>", "enterprise id")
    .requiredOption("--scopes <list>", `comma-separated permissions: ${PERMISSIONS.join(", ")}`)
    .option("--name <name>", "a label for the app: 1 to 128 characters, no control, invisible or text-direction characters, no white space at either end", "app")
    .addOption(dbOption())
    .action(async (opts, command: Command) => {
      const permissions = parsePermissions(opts.scopes);
      const app = await withDatabase(io, opts.db, (database) => accessAdmin(database).createApp(opts.enterprise, permissions, opts.name));
      // JSON on a terminal too: the secret is shown this once, in the form scripts and people copy alike.
      io.stdout.write(`${JSON.stringify(app)}\n`);
    });
  appCommand.command("list").description("list an enterprise's apps").requiredOption("--enterprise <id>", "enterprise id")
    .addOption(dbOption())
    .action(async (opts, command: Command) => {
      const apps = await withDatabase(io, opts.db, (database) => accessAdmin(database).listApps(opts.enterprise));
      outputOf(command, io.stdout).result(apps, { times: ["created_at"], empty: `enterprise "${opts.enterprise}" has no apps` });
    });
  appCommand.command("revoke").argument("<app_id>").description("revoke an app; its tokens stop working at once")
    .addOption(dbOption())
    .action(async (appId: string, opts, command: Command) => {
      const found = await withDatabase(io, opts.db, (database) => accessAdmin(database).revokeApp(appId));
      if (!found) throw invalidParameter(`app "${appId}" not found`);
      outputOf(command, io.stdout).result({ app_id: appId, revoked: true });
    });

  const keysCommand = program.command("keys").description("the master keys that wrap the secrets' data keys (every command is safe while servers run)");

  keysCommand.command("rotate")
    .description("make a new master key current, re-wrap every data key under it, then move the retired keys this database added and no data key needs out of the key file")
    .option("--new-key-file <path>", "a file holding the new 32-byte master key, base64 (required when ENTERPRISE_ADMIN_MASTER_KEY is used; else one is generated into the key file)")
    .option("--new-key <base64>", "the same given on the command line, where other users may see it (process list, shell history): prefer --new-key-file")
    .addOption(dbOption())
    .action(async (opts, command: Command) => {
      const newKey = await newKeyOption(opts);
      const { summary, source } = await withKeys(io, opts.db, true, async (repository, keys) =>
        ({ summary: await rotateMasterKey(repository, keys, { newKey }), source: keys.source }));
      outputOf(command, io.stdout).result(summary);
      if (source.kind === "env") {
        io.stderr.write(`new data keys are now wrapped under "${summary.master_key_id}": every instance needs the new key in ENTERPRISE_ADMIN_MASTER_KEY; ` +
          "a retired key may leave the variable once `keys status` shows it wraps no data key\n");
      }
    });

  keysCommand.command("merge").argument("<file>", "another key file: a backup's, or its .retired")
    .description("add the keys of another key file that this key file lacks, for a restore: nothing is removed or replaced, so the keys of later rotations stay")
    .addOption(dbOption())
    .action(async (file: string, opts, command: Command) => {
      const added = await withKeys(io, opts.db, false, (_repository, keys) => keys.addKeysFrom(file)).catch((error: unknown) => {
        throw error instanceof KeyFileMissingError ? new KeyFileMissingError(error.path, { ...error.hints, mergedFrom: file }) : error;
      });
      outputOf(command, io.stdout).result({ added });
    });

  keysCommand.command("status").description("each master key, current or retired, whether it is held, and how many data keys it wraps")
    .addOption(dbOption())
    .action(async (opts, command: Command) => {
      outputOf(command, io.stdout).result(await withKeys(io, opts.db, false, keyRingStatus));
    });

  keysCommand.command("verify").description("unwrap every data key; exit 1 naming each environment config that cannot be read")
    .addOption(dbOption())
    .action(async (opts, command: Command) => {
      const report = await withKeys(io, opts.db, false, verifyDataKeys);
      outputOf(command, io.stdout).result(report);
      for (const config of report.unreadable) {
        io.stderr.write(`error: environment config "${config.name}" (${config.environment_id}) of enterprise "${config.enterprise_id}" cannot be read: ${config.reason}\n`);
      }
      if (!report.current_master_key_held) {
        io.stderr.write(`error: the current master key "${report.current_master_key_id}" is not held by this key source: new secrets would be refused\n`);
      }
      if (!report.ok) throw new ReportedFailure(1);
    });

  const tokenCommand = program.command("token").description("access tokens (never printed back once made)");
  tokenCommand.command("create")
    .description("print a ready access token (alone on stdout, piped or not, unless --json; its token_id goes to stderr)")
    .requiredOption("--enterprise <id>", "enterprise id")
    .requiredOption("--scopes <list>", `comma-separated permissions: ${PERMISSIONS.join(", ")}`)
    .option("--expires-in <duration>", "lifetime: 90s, 15m, 2h, 7d; at most 90d", "2h")
    .addOption(dbOption())
    .action(async (opts, command: Command) => {
      const ttl = parseDuration(opts.expiresIn);
      if (ttl === undefined) throw invalidParameter(`--expires-in: "${opts.expiresIn}" is not a duration like 90s, 15m, 2h or 7d`);
      if (ttl > MAX_ACCESS_TOKEN_TTL_SECONDS) throw invalidParameter(`--expires-in: "${opts.expiresIn}" is longer than the cap of ${MAX_ACCESS_TOKEN_TTL_SECONDS / 86400} days (${MAX_ACCESS_TOKEN_TTL_SECONDS / 86400}d)`);
      const permissions = parsePermissions(opts.scopes);
      const token = await withDatabase(io, opts.db, (database) => accessAdmin(database).createToken(opts.enterprise, permissions, ttl));
      io.stderr.write(`token_id: ${token.tokenId}\n`);
      outputOf(command, io.stdout).value(token.accessToken, { access_token: token.accessToken, token_id: token.tokenId, expire: token.expire });
    });
  tokenCommand.command("list").description("list an enterprise's tokens, live and ended within a day (never the tokens)")
    .requiredOption("--enterprise <id>", "enterprise id")
    .addOption(dbOption())
    .action(async (opts, command: Command) => {
      const tokens = await withDatabase(io, opts.db, (database) => accessAdmin(database).listTokens(opts.enterprise));
      outputOf(command, io.stdout).result(tokens, { times: ["created_at", "expires_at"], empty: `enterprise "${opts.enterprise}" has no live or recently ended tokens` });
    });
  tokenCommand.command("revoke").argument("<token_id>").description("revoke a token; the next call with it gets 401 on every server")
    .addOption(dbOption())
    .action(async (tokenId: string, opts, command: Command) => {
      const found = await withDatabase(io, opts.db, (database) => accessAdmin(database).revokeToken(tokenId));
      if (!found) throw invalidParameter(`token "${tokenId}" not found`);
      outputOf(command, io.stdout).result({ token_id: tokenId, revoked: true });
    });

  return program;
}
