// An exclusive lock beside a file, for read-modify-write cycles across processes (the key file is
// rewritten whole, so two writers without it could each drop the other's new key). The lock is a file
// created with O_EXCL that names its holder; a holder that died leaves it behind, so a lock whose
// process is gone (same host) or that is older than any cycle could take is broken.
import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { link, open, readFile, rename, stat, unlink } from "node:fs/promises";
import { hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";

export interface FileLockOptions {
  /** How long to wait for another holder before giving up. */
  waitMs?: number;
  /** A lock older than this is a crashed holder's (a cycle takes milliseconds). */
  staleMs?: number;
}

const DEFAULT_WAIT_MS = 10_000;
const DEFAULT_STALE_MS = 30_000;
const POLL_MS = 25;

/** Runs `work` while holding `lockPath`; the lock is released (if still ours) whatever `work` does. */
export async function withFileLock<T>(lockPath: string, work: () => Promise<T>, options: FileLockOptions = {}): Promise<T> {
  const { waitMs = DEFAULT_WAIT_MS, staleMs = DEFAULT_STALE_MS } = options;
  const holder = JSON.stringify({ host: hostname(), pid: process.pid, token: randomBytes(8).toString("hex") });
  const deadline = Date.now() + waitMs;
  while (!(await tryCreate(lockPath, holder))) {
    if (await breakIfStale(lockPath, staleMs)) continue;
    if (Date.now() >= deadline) throw new Error(`lock ${lockPath} is held by another process (${await describeHolder(lockPath)}); try again, or remove it if no enterprise-admin process is running`);
    await sleep(POLL_MS);
  }
  try {
    return await work();
  } finally {
    // Only our own lock: one broken as stale and taken by another process is theirs now.
    if ((await readFile(lockPath, "utf8").catch(() => "")) === holder) await unlink(lockPath).catch(() => {});
  }
}

async function tryCreate(lockPath: string, holder: string): Promise<boolean> {
  let handle;
  try {
    handle = await open(lockPath, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
  try {
    await handle.writeFile(holder, "utf8");
    await handle.close();
  } catch (error) {
    await handle.close().catch(() => {});
    // Ours (O_EXCL made it), and empty: left behind (a full disk), it would hold off every writer until it is stale.
    await unlink(lockPath).catch(() => {});
    // A write through the handle names no file: the CLI says which (cli-errors.ts).
    throw Object.assign(error as object, { path: lockPath });
  }
  return true;
}

/** Removes the lock when its holder is gone; true when it did (or the lock vanished meanwhile). */
async function breakIfStale(lockPath: string, staleMs: number): Promise<boolean> {
  let content: string;
  let ageMs: number;
  try {
    ageMs = Date.now() - (await stat(lockPath)).mtimeMs;
    content = await readFile(lockPath, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return true;
    throw error;
  }
  if (!isStale(content, ageMs, staleMs)) return false;
  // Moved aside first, then checked: if another process replaced the stale lock in between, the one
  // moved aside is theirs and goes back.
  const aside = `${lockPath}.${randomBytes(6).toString("hex")}.stale`;
  try {
    await rename(lockPath, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return true;
    throw error;
  }
  if ((await readFile(aside, "utf8").catch(() => content)) !== content) await link(aside, lockPath).catch(() => {});
  await unlink(aside).catch(() => {});
  return true;
}

function isStale(content: string, ageMs: number, staleMs: number): boolean {
  if (ageMs >= staleMs) return true;
  const holder = parseHolder(content);
  // Empty or unreadable: its creator is between creating and writing it, or died there; age decides.
  if (!holder || holder.host !== hostname()) return false;
  return !processAlive(holder.pid);
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function parseHolder(content: string): { host: string; pid: number } | undefined {
  try {
    const parsed = JSON.parse(content) as { host?: unknown; pid?: unknown };
    return typeof parsed.host === "string" && typeof parsed.pid === "number" ? { host: parsed.host, pid: parsed.pid } : undefined;
  } catch {
    return undefined;
  }
}

async function describeHolder(lockPath: string): Promise<string> {
  const holder = parseHolder(await readFile(lockPath, "utf8").catch(() => ""));
  return holder ? `pid ${holder.pid} on ${holder.host}` : "holder unknown";
}
