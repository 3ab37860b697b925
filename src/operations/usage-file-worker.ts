// The worker threads of `import usage`: "check" checks a byte range; "read" parses (half an import's work) beside the main thread's writes.
import { createReadStream } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import { modelKey } from "../domain/usage-event.js";
import { AppError, ErrorCode } from "../domain/errors.js";
import { lineBatches, parseUsageLine } from "./usage-file-lines.js";

/** Checked events of consecutive lines, in columns; every value a number (at most 10^12). */
export interface EventColumns {
  eventIds: string[];
  /** Per event: its index in the file's user, and model (`modelKey`), dictionaries, which each batch's new ones extend in order. */
  users: Int32Array;
  models: Int32Array;
  newUserIds: string[];
  newModelKeys: string[];
  /** Per event: timestamp, input_tokens, output_tokens, basic micros, pay-go micros. */
  values: Float64Array;
  count: number;
}

/** To the main thread ("invalid": a bad line, named with its field; "failed": unreadable); from it: "more" (one batch consumed). */
export type UsageFileMessage =
  | { kind: "events"; events: EventColumns; bytesRead: number }
  | { kind: "done"; lines: number }
  | { kind: "invalid"; message: string }
  | { kind: "failed"; message: string };

export const VALUES_PER_EVENT = 5;
/** Batches sent and not yet consumed at most: bounds the memory ahead of the database (about 25 MB) yet keeps either thread from waiting. */
const BATCHES_AHEAD = 64;

/** Events per batch (a message) and per chunk (a commit, ended by the first batch reaching it); tests make them small. */
export interface UsageFileTuning {
  batchEvents: number;
  chunkEvents: number;
}

// Each commit rewrites the pages its chunk touched, so larger chunks import faster; live ingestion waits at most one chunk (about 0.5 s).
export const DEFAULT_TUNING: Readonly<UsageFileTuning> = Object.freeze({ batchEvents: 5000, chunkEvents: 50_000 });

/** `read`: the first `bytes` of the file (at least 1), those checked (lines added since are not part of the import). */
export type UsageFileWorkerData = { task: "read"; path: string; bytes: number; batchEvents: number } | ({ task: "check" } & RangeCheckData);

/** A user_id's first event in a range: its line (counted from the range's start) and event_id. */
export type FirstUse = [userId: string, line: number, eventId: string];

export type RangeCheck =
  | { kind: "checked"; lines: number; users: FirstUse[] }
  /** The range's first bad line (counted from the range's start); `reason` follows the line's name in the message. */
  | { kind: "invalid"; line: number; reason: string }
  | { kind: "failed"; message: string };

export interface RangeCheckData {
  path: string;
  start: number;
  end: number; // exclusive
}

async function checkLines({ path, start, end }: RangeCheckData): Promise<RangeCheck> {
  const users = new Map<string, FirstUse>();
  let line = 0;
  if (end > start) {
    const stream = createReadStream(path, { start, end: end - 1, highWaterMark: 1 << 20 });
    try {
      for await (const lines of lineBatches(stream)) {
        for (const text of lines) {
          line++;
          // Unnamed: the main thread prefixes the absolute line once it knows the range's first.
          const event = parseUsageLine(text, "");
          if (event !== undefined && !users.has(event.userId)) users.set(event.userId, [event.userId, line, event.eventId]);
        }
      }
    } catch (error) {
      if (error instanceof AppError && error.code === ErrorCode.INVALID_PARAMETER) return { kind: "invalid", line, reason: error.message };
      return { kind: "failed", message: error instanceof Error ? error.message : String(error) };
    }
  }
  return { kind: "checked", lines: line, users: [...users.values()] };
}

async function readUsageFile(path: string, bytes: number, batchEvents: number, send: (message: UsageFileMessage) => Promise<void>): Promise<void> {
  const stream = createReadStream(path, { end: bytes - 1, highWaterMark: 1 << 20 });
  try {
    let lineNumber = 0;
    const newBatch = (): EventColumns => ({
      eventIds: [], newUserIds: [], newModelKeys: [], count: 0, users: new Int32Array(batchEvents),
      models: new Int32Array(batchEvents), values: new Float64Array(batchEvents * VALUES_PER_EVENT),
    });
    let batch = newBatch();
    const userIndex = new Map<string, number>();
    const modelIndex = new Map<string, number>();
    for await (const lines of lineBatches(stream)) {
      for (const line of lines) {
        lineNumber++;
        const event = parseUsageLine(line, `line ${lineNumber}`);
        if (event === undefined) continue;
        const i = batch.count++;
        batch.eventIds.push(event.eventId);
        let user = userIndex.get(event.userId);
        if (user === undefined) {
          userIndex.set(event.userId, (user = userIndex.size));
          batch.newUserIds.push(event.userId);
        }
        batch.users[i] = user;
        const key = modelKey(event.modelName, event.modelType, event.modelSource);
        let model = modelIndex.get(key);
        if (model === undefined) {
          modelIndex.set(key, (model = modelIndex.size));
          batch.newModelKeys.push(key);
        }
        batch.models[i] = model;
        const at = i * VALUES_PER_EVENT;
        batch.values[at] = event.timestamp;
        batch.values[at + 1] = event.inputTokens as number;
        batch.values[at + 2] = event.outputTokens as number;
        batch.values[at + 3] = event.basicMicros as number;
        batch.values[at + 4] = event.payGoMicros as number;
        if (batch.count === batchEvents) {
          await send({ kind: "events", events: batch, bytesRead: stream.bytesRead });
          batch = newBatch();
        }
      }
    }
    if (batch.count > 0) await send({ kind: "events", events: batch, bytesRead: stream.bytesRead });
    await send({ kind: "done", lines: lineNumber });
  } finally {
    stream.destroy();
  }
}

export async function runUsageFileThread(): Promise<void> {
  const data = workerData as UsageFileWorkerData;
  const port = parentPort!;
  if (data.task === "check") return port.postMessage(await checkLines(data));
  // "read": the file for the main thread, at most BATCHES_AHEAD batches ahead of it.
  let credits = BATCHES_AHEAD;
  let wake: (() => void) | undefined;
  port.on("message", (message) => {
    if (message !== "more") return;
    credits++;
    wake?.();
    wake = undefined;
  });
  const send = async (message: UsageFileMessage) => {
    if (message.kind !== "events") return port.postMessage(message);
    while (credits === 0) await new Promise<void>((resolve) => (wake = resolve));
    credits--;
    const { users, models, values } = message.events;
    port.postMessage(message, [users.buffer, models.buffer, values.buffer] as ArrayBuffer[]);
  };
  readUsageFile(data.path, data.bytes, data.batchEvents, send).catch((error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    const invalid = error instanceof AppError && error.code === ErrorCode.INVALID_PARAMETER;
    port.postMessage((invalid ? { kind: "invalid", message } : { kind: "failed", message }) satisfies UsageFileMessage);
  }).finally(() => port.close());
}
