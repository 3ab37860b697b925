// One worker thread of `import usage`'s first pass (usage-file-check.ts): checks a byte range of the file (bundled from usage-range-check.mjs).
import { createReadStream } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import { AppError, ErrorCode } from "../domain/errors.js";
import { lineBatches, parseUsageLine } from "./usage-file-lines.js";

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
  /** Exclusive. */
  end: number;
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

/** The worker thread's work (usage-range-check.mjs): checks its range and posts the RangeCheck. */
export async function runRangeCheck(): Promise<void> {
  parentPort!.postMessage(await checkLines(workerData as RangeCheckData));
}
