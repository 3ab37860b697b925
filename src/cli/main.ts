// The enterprise-admin command line (docs/cli.md). Each command opens the database named by
// --db (else DATABASE_URL, else ./data/enterprise-admin.sqlite), migrates it, and does one job.
import { readFile } from "node:fs/promises";
import { Command, Option } from "commander";
import { loadConfig, loadServeConfig, usageImportTuning } from "../config.js";
import { MAX_ACCESS_TOKEN_TTL_SECONDS, parseDuration } from "../domain/credentials.js";
import { parseDirectoryFile } from "../domain/directory-file.js";
import { AppError } from "../domain/errors.js";
import { PERMISSIONS, parsePermissions } from "../domain/permissions.js";
import { serveUntilSignal } from "../main.js";
import { AccessAdmin } from "../operations/access-admin.js";
import { importDirectory } from "../operations/import-directory.js";
import { importUsage } from "../operations/import-usage.js";
import { rotateMasterKey } from "../operations/rotate-master-key.js";
import { decodeKey, loadLocalKeyProvider, type LocalKeyProvider } from "../keys/local-key-provider.js";
import { keyRingStatus, verifyDataKeys } from "../operations/inspect-master-keys.js";
import { EnvironmentConfigRepository } from "../storage/environment-config-repository.js";
import { UsageRepository } from "../storage/usage-repository.js";
import { exportProgressBar, progressBar } from "./progress-bar.js";
import { exportUsageFile } from "./export-usage.js";
import { RECORD_FORMATS } from "../rest/record-formats.js";
import { AuthRepository } from "../storage/auth-repository.js";
import { migrateToLatest, openDatabase, type Database } from "../storage/database.js";
import { DirectoryRepository } from "../storage/directory-repository.js";
import { DEMO_ENTERPRISE_ID, demoDirectory } from "./demo-directory.js";
import { DEMO_USAGE_DAYS, demoUsageEvents } from "./demo-usage.js";
import { demoEnvironments } from "./demo-environments.js";
import { EnvironmentConfigs } from "../operations/environment-configs.js";
import { checkUsageEvent } from "../domain/usage-event.js";
import { recordUsage } from "../operations/record-usage.js";

const dbOption = () => new Option("--db <url>", "database: a SQLite file path or file: URL, or postgres://… (default: $DATABASE_URL, else ./data/enterprise-admin.sqlite)");

async function withDatabase<T>(url: string | undefined, work: (database: Database) => Promise<T>, migrate = true): Promise<T> {
  const database = openDatabase(loadConfig({ db: url }).databaseUrl);
  try {
    if (migrate) await migrateToLatest(database);
    return await work(database);
  } catch (error) {
    // A full disk or a busy store is said as such, with the store's location, not as the driver's words alone.
    throw database.faultOf(error) ?? error;
  } finally {
    await database.close();
  }
}

const accessAdmin = (database: Database) =>
  new AccessAdmin(new AuthRepository(database.db), new DirectoryRepository(database.db));

const program = new Command("enterprise-admin")
  .description("Enterprise Admin Service: serve the API and administer its data")
  .showHelpAfterError();

program.command("serve").description("migrate the database, then serve every transport on one port")
  .option("--port <n>", "port (default: $PORT, else 8080)")
  .option("--host <addr>", "address to bind (default: $HOST, else 127.0.0.1)")
  .addOption(dbOption())
  .action(async (opts) => serveUntilSignal(loadServeConfig({ port: opts.port, host: opts.host, db: opts.db })));

program.command("migrate").description("apply pending migrations").addOption(dbOption())
  .action(async (opts) => {
    const applied = await withDatabase(opts.db, async (database) => migrateToLatest(database), false);
    console.log(JSON.stringify({ applied }));
  });

program.command("seed").description("load demo data and print an access token with every permission")
  .requiredOption("--demo", "the demo enterprise: departments, members, three months of usage, two environment configs")
  .addOption(dbOption())
  .action(async (opts) => {
    const token = await withDatabase(opts.db, async (database) => {
      const summary = await importDirectory(database, demoDirectory);
      const events = demoUsageEvents().map((raw, i) => ({ event: checkUsageEvent(raw, `demo event ${i}`), where: `demo event ${i}` }));
      const usage = await recordUsage(new UsageRepository(database), DEMO_ENTERPRISE_ID, events);
      const environments = new EnvironmentConfigs(new EnvironmentConfigRepository(database.db),
        await loadLocalKeyProvider({ databaseUrl: loadConfig({ db: opts.db }).databaseUrl }));
      const existing = new Set((await environments.list(DEMO_ENTERPRISE_ID, 100, "")).items.map((item) => item.row.name));
      const created = demoEnvironments.filter((config) => !existing.has(config.name!));
      for (const config of created) await environments.create(DEMO_ENTERPRISE_ID, config);
      console.error(`seeded enterprise "${summary.enterprise_id}": ${summary.departments} departments, ${summary.members} members, ` +
        `${usage.recorded} new usage events over ${DEMO_USAGE_DAYS} days, ${created.length} new environment configs`);
      return accessAdmin(database).createToken(DEMO_ENTERPRISE_ID, [...PERMISSIONS], 7 * 86400);
    });
    console.error("access token with every permission (valid 7 days):");
    console.log(token.accessToken);
  });

const importCommand = program.command("import").description("load data files");
importCommand.command("directory").argument("<file>", "directory JSON file (see README)")
  .description("upsert one enterprise, its departments and members; idempotent; all or nothing")
  .option("--prune", "also remove the departments and members absent from the file (members become former members: their usage history stays)")
  .option("--dry-run", "print what the import would do (removals included), write nothing")
  .addOption(dbOption())
  .action(async (file: string, opts) => {
    const text = await readFile(file, "utf8");
    const parsed = parseDirectoryFile(text);
    const summary = await withDatabase(opts.db, (database) => importDirectory(database, parsed, { prune: opts.prune, dryRun: opts.dryRun }));
    console.log(JSON.stringify(summary));
  });

importCommand.command("usage").argument("<file>", "NDJSON usage events, one per line (see README)")
  .description("load usage events; idempotent by event_id; progress bar on a TTY; checks the whole file before writing, then commits in short chunks (re-run after a crash to complete)")
  .requiredOption("--enterprise <id>", "enterprise id")
  .addOption(dbOption())
  .action(async (file: string, opts) => {
    const summary = await withDatabase(opts.db, (database) =>
      importUsage(new UsageRepository(database), opts.enterprise, file, process.stderr.isTTY ? progressBar() : undefined, usageImportTuning()));
    console.log(JSON.stringify(summary));
  });

const exportCommand = program.command("export").description("write data files");
exportCommand.command("usage")
  .description("rows per (local date, member, model) with usage, in date order, as CSV or NDJSON (the REST export's formats); progress bar on a TTY")
  .requiredOption("--enterprise <id>", "enterprise id")
  .requiredOption("--from <date>", "first local date, YYYY-MM-DD (inclusive)")
  .requiredOption("--to <date>", "last local date, YYYY-MM-DD (inclusive)")
  .option("--time-zone <tz>", "IANA time zone of the dates (default: the enterprise's)")
  .option("--format <format>", `file format: ${RECORD_FORMATS.join(" or ")}`, "csv")
  .option("--out <file>", "write to this file (complete or not at all) instead of stdout")
  .addOption(dbOption())
  .action(async (opts) => {
    const summary = await withDatabase(opts.db, (database) => exportUsageFile(database,
      { enterprise: opts.enterprise, from: opts.from, to: opts.to, timeZone: opts.timeZone, format: opts.format, out: opts.out },
      process.stderr.isTTY ? exportProgressBar() : undefined));
    // stdout may be the export itself: the summary goes to stderr.
    console.error(JSON.stringify(summary));
  });

const appCommand = program.command("app").description("enterprise apps (app_id/app_secret)");
appCommand.command("create").description("create an app and print its app_id and app_secret")
  .requiredOption("--enterprise <id>", "enterprise id")
  .requiredOption("--scopes <list>", `comma-separated permissions: ${PERMISSIONS.join(", ")}`)
  .option("--name <name>", "a label for the app", "app")
  .addOption(dbOption())
  .action(async (opts) => {
    const permissions = parsePermissions(opts.scopes);
    const app = await withDatabase(opts.db, (database) => accessAdmin(database).createApp(opts.enterprise, permissions, opts.name));
    console.log(JSON.stringify(app));
  });
appCommand.command("list").description("list an enterprise's apps").requiredOption("--enterprise <id>", "enterprise id")
  .addOption(dbOption())
  .action(async (opts) => {
    const apps = await withDatabase(opts.db, (database) => accessAdmin(database).listApps(opts.enterprise));
    console.log(JSON.stringify(apps, null, 2));
  });
appCommand.command("revoke").argument("<app_id>").description("revoke an app; its tokens stop working at once")
  .addOption(dbOption())
  .action(async (appId: string, opts) => {
    const found = await withDatabase(opts.db, (database) => accessAdmin(database).revokeApp(appId));
    if (!found) throw new AppError(4001, `app "${appId}" not found`);
    console.log(JSON.stringify({ app_id: appId, revoked: true }));
  });

const keysCommand = program.command("keys").description("the master keys that wrap the secrets' data keys (every command is safe while servers run)");
/** `create`: whether a missing key file is created (serve and rotate) or an error (commands that only read). */
const withKeys = <T>(url: string | undefined, create: boolean, work: (repository: EnvironmentConfigRepository, keys: LocalKeyProvider) => Promise<T>) =>
  withDatabase(url, async (database) =>
    work(new EnvironmentConfigRepository(database.db), await loadLocalKeyProvider({ databaseUrl: loadConfig({ db: url }).databaseUrl, create })));

/** The new key of --new-key-file or --new-key, strictly decoded; the error never quotes it. */
async function newKeyOption(opts: { newKey?: string; newKeyFile?: string }): Promise<Buffer | undefined> {
  if (opts.newKey !== undefined && opts.newKeyFile !== undefined) throw new AppError(4001, "--new-key and --new-key-file: pass one of them, not both");
  try {
    if (opts.newKeyFile !== undefined) return decodeKey(await readFile(opts.newKeyFile, "utf8"), `--new-key-file: ${opts.newKeyFile}`);
    if (opts.newKey !== undefined) return decodeKey(opts.newKey, "--new-key");
  } catch (error) {
    throw new AppError(4001, (error as Error).message);
  }
  return undefined;
}

keysCommand.command("rotate")
  .description("make a new master key current, re-wrap every data key under it, then move the retired keys this database added and no data key needs out of the key file")
  .option("--new-key-file <path>", "a file holding the new 32-byte master key, base64 (required when ENTERPRISE_ADMIN_MASTER_KEY is used; else one is generated into the key file)")
  .option("--new-key <base64>", "the same given on the command line, where other users may see it (process list, shell history): prefer --new-key-file")
  .addOption(dbOption())
  .action(async (opts) => {
    const newKey = await newKeyOption(opts);
    const { summary, source } = await withKeys(opts.db, true, async (repository, keys) =>
      ({ summary: await rotateMasterKey(repository, keys, { newKey }), source: keys.source }));
    console.log(JSON.stringify(summary));
    if (source.kind === "env") {
      console.error(`new data keys are now wrapped under "${summary.master_key_id}": every instance needs the new key in ENTERPRISE_ADMIN_MASTER_KEY; ` +
        "a retired key may leave the variable once `keys status` shows it wraps no data key");
    }
  });

keysCommand.command("status").description("each master key, current or retired, whether it is held, and how many data keys it wraps")
  .addOption(dbOption())
  .action(async (opts) => {
    console.log(JSON.stringify(await withKeys(opts.db, false, keyRingStatus)));
  });

keysCommand.command("verify").description("unwrap every data key; exit 1 naming each environment config that cannot be read")
  .addOption(dbOption())
  .action(async (opts) => {
    const report = await withKeys(opts.db, false, verifyDataKeys);
    console.log(JSON.stringify(report));
    for (const config of report.unreadable) {
      console.error(`error: environment config "${config.name}" (${config.environment_id}) of enterprise "${config.enterprise_id}" cannot be read: ${config.reason}`);
    }
    if (!report.current_master_key_held) {
      console.error(`error: the current master key "${report.current_master_key_id}" is not held by this key source: new secrets would be refused`);
    }
    if (!report.ok) process.exitCode = 1;
  });

const tokenCommand = program.command("token").description("access tokens (never printed back once made)");
tokenCommand.command("create")
  .description("print a ready access token (alone on stdout; its token_id goes to stderr)")
  .requiredOption("--enterprise <id>", "enterprise id")
  .requiredOption("--scopes <list>", `comma-separated permissions: ${PERMISSIONS.join(", ")}`)
  .option("--expires-in <duration>", "lifetime: 90s, 15m, 2h, 7d; at most 90d", "2h")
  .addOption(dbOption())
  .action(async (opts) => {
    const ttl = parseDuration(opts.expiresIn);
    if (ttl === undefined) throw new AppError(4001, `--expires-in: "${opts.expiresIn}" is not a duration like 90s, 15m, 2h or 7d`);
    if (ttl > MAX_ACCESS_TOKEN_TTL_SECONDS) throw new AppError(4001, `--expires-in: "${opts.expiresIn}" is longer than the cap of ${MAX_ACCESS_TOKEN_TTL_SECONDS / 86400} days (${MAX_ACCESS_TOKEN_TTL_SECONDS / 86400}d)`);
    const permissions = parsePermissions(opts.scopes);
    const token = await withDatabase(opts.db, (database) => accessAdmin(database).createToken(opts.enterprise, permissions, ttl));
    console.error(`token_id: ${token.tokenId}`);
    console.log(token.accessToken);
  });
tokenCommand.command("list").description("list an enterprise's tokens, live and ended within a day (never the tokens)")
  .requiredOption("--enterprise <id>", "enterprise id")
  .addOption(dbOption())
  .action(async (opts) => {
    const tokens = await withDatabase(opts.db, (database) => accessAdmin(database).listTokens(opts.enterprise));
    console.log(JSON.stringify(tokens, null, 2));
  });
tokenCommand.command("revoke").argument("<token_id>").description("revoke a token; the next call with it gets 401 on every server")
  .addOption(dbOption())
  .action(async (tokenId: string, opts) => {
    const found = await withDatabase(opts.db, (database) => accessAdmin(database).revokeToken(tokenId));
    if (!found) throw new AppError(4001, `token "${tokenId}" not found`);
    console.log(JSON.stringify({ token_id: tokenId, revoked: true }));
  });

program.parseAsync(process.argv).catch((error: unknown) => {
  if (error instanceof AppError) {
    console.error(`error: ${error.message}`);
    process.exit(2);
  }
  console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
