// The first pass of `import usage`: every line checked on worker threads, and each user_id's first line gathered.
import { open } from "node:fs/promises";
import { once } from "node:events";
import { Worker } from "node:worker_threads";
import { invalidParameter } from "../domain/errors.js";
import type { RangeCheck, RangeCheckData, UsageFileWorkerData } from "./usage-file-worker.js";

/** Files below this size are checked on one thread (a second costs more than it saves). */
const SPLIT_BYTES = 8 * 2 ** 20;

/** Each user_id's first event (absolute line, event_id) in line order; throws naming the first bad line. `thread`: usage-file-worker.mjs, bundled. */
export async function checkUsageFile(path: string, totalBytes: number, thread: URL): Promise<Map<string, { line: number; eventId: string }>> {
  const middle = totalBytes >= SPLIT_BYTES ? await lineStartAfter(path, Math.floor(totalBytes / 2)) : totalBytes;
  const ranges = [{ path, start: 0, end: middle }, ...(middle < totalBytes ? [{ path, start: middle, end: totalBytes }] : [])];
  const results = await Promise.all(ranges.map((range) => checkRange(thread, range)));
  const users = new Map<string, { line: number; eventId: string }>();
  let linesBefore = 0;
  for (const result of results) {
    if (result.kind === "failed") throw new Error(`reading ${path}: ${result.message}`);
    if (result.kind === "invalid") throw invalidParameter(`line ${linesBefore + result.line}${result.reason}`);
    for (const [userId, line, eventId] of result.users) if (!users.has(userId)) users.set(userId, { line: linesBefore + line, eventId });
    linesBefore += result.lines;
  }
  return users;
}

/** The file's size when no line starts at or after `offset`. */
async function lineStartAfter(path: string, offset: number): Promise<number> {
  const file = await open(path, "r");
  try {
    const buffer = Buffer.alloc(1 << 16);
    for (let at = offset; ; at += buffer.length) {
      const { bytesRead } = await file.read(buffer, 0, buffer.length, at);
      if (bytesRead === 0) return at;
      const newline = buffer.subarray(0, bytesRead).indexOf(10);
      if (newline !== -1) return at + newline + 1;
    }
  } finally {
    await file.close();
  }
}

async function checkRange(thread: URL, data: RangeCheckData): Promise<RangeCheck> {
  const worker = new Worker(thread, { workerData: { task: "check", ...data } satisfies UsageFileWorkerData });
  try {
    return (await once(worker, "message"))[0] as RangeCheck;
  } finally {
    await worker.terminate();
  }
}
