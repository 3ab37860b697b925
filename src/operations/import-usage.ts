// Streams an NDJSON file of usage events into the store in one ingestion. A worker thread reads,
// parses, checks and sums the lines (usage-file-worker.ts) while this thread resolves members and
// models and writes the events and the worker's sums; an error names the line and rolls back the
// whole file, and the file is never held in memory (the worker stays at most 64 batches ahead).
import { stat } from "node:fs/promises";
import { on } from "node:events";
import { Worker } from "node:worker_threads";
import { invalidParameter } from "../domain/errors.js";
import { modelOfKey } from "../domain/usage-event.js";
import { dayOf } from "../domain/usage-window.js";
import type { UsageEventRow, UsageRepository } from "../storage/usage-repository.js";
import { MemberKeys } from "./record-usage.js";
import { DEFAULT_TUNING, VALUES_PER_EVENT, type EventColumns, type UsageFileMessage, type UsageFileTuning, type UsageFileWorkerData } from "./usage-file-worker.js";

export interface ImportProgress {
  start(totalBytes: number): void;
  update(bytesRead: number, events: number): void;
  stop(): void;
}

export interface UsageImportSummary {
  enterprise_id: string;
  lines: number;
  recorded: number;
  duplicates: number;
}

export async function importUsage(repository: UsageRepository, enterpriseId: string, path: string, progress?: ImportProgress,
  tuning: UsageFileTuning = DEFAULT_TUNING): Promise<UsageImportSummary> {
  if ((await repository.currency(enterpriseId)) === undefined) {
    throw invalidParameter(`enterprise "${enterpriseId}" does not exist (import a directory file first)`);
  }
  const totalBytes = (await stat(path)).size;
  const worker = new Worker(new URL("./usage-file-worker.mjs", import.meta.url), { workerData: { path, tuning } satisfies UsageFileWorkerData });
  let lines = 0;
  let events = 0;
  progress?.start(totalBytes);
  try {
    const recorded = await repository.ingest(async (tx) => {
      const keys = new FileKeys(tx, new MemberKeys(tx, enterpriseId));
      for await (const [message] of on(worker, "message") as AsyncIterable<[UsageFileMessage]>) {
        if (message.kind === "invalid") throw invalidParameter(message.message);
        if (message.kind === "failed") throw new Error(`reading ${path}: ${message.message}`);
        if (message.kind === "sums") {
          await tx.addSumFrames(message.frames, keys.memberKeys, keys.modelIds);
          continue;
        }
        if (message.kind === "done") {
          lines = message.lines;
          return;
        }
        worker.postMessage("more");
        await tx.insertEvents(enterpriseId, await keys.toRows(message.events), { summed: true });
        events += message.events.count;
        progress?.update(message.bytesRead, events);
      }
    });
    return { enterprise_id: enterpriseId, lines, recorded, duplicates: events - recorded };
  } finally {
    await worker.terminate();
    progress?.stop();
  }
}

/** The file's user and model dictionaries (see EventColumns), resolved to member keys and model ids as they grow. */
class FileKeys {
  /** By the file's user index. */
  readonly memberKeys: number[] = [];
  /** By the file's model index. */
  readonly modelIds: number[] = [];

  constructor(private readonly repository: UsageRepository, private readonly members: MemberKeys) {}

  /** Rows for a batch of checked events: new members (an unknown one rejects the file) and models resolved. */
  async toRows(batch: EventColumns): Promise<UsageEventRow[]> {
    if (batch.newUserIds.length > 0) {
      const firstUser = this.memberKeys.length;
      // An unknown member is named by the first event that has it: a new user_id's first event is in this batch.
      await this.members.resolveIds(batch.newUserIds, (j) => {
        const i = batch.users.indexOf(firstUser + j);
        return `line ${batch.lines[i]} (event_id ${JSON.stringify(batch.eventIds[i])})`;
      });
      for (const userId of batch.newUserIds) this.memberKeys.push(this.members.key(userId));
    }
    if (batch.newModelKeys.length > 0) {
      const models = await this.repository.resolveModels(batch.newModelKeys, (i) => modelOfKey(batch.newModelKeys[i]!));
      for (const key of batch.newModelKeys) this.modelIds.push(models.get(key)!);
    }
    const rows: UsageEventRow[] = new Array(batch.count);
    const { users, models, values } = batch;
    for (let i = 0; i < batch.count; i++) {
      const v = i * VALUES_PER_EVENT;
      rows[i] = {
        eventId: batch.eventIds[i]!, memberKey: this.memberKeys[users[i]!]!, modelId: this.modelIds[models[i]!]!,
        ts: values[v]!, day: dayOf(values[v]!), inputTokens: values[v + 1]!, outputTokens: values[v + 2]!, basicMicros: values[v + 3]!, payGoMicros: values[v + 4]!,
      };
    }
    return rows;
  }
}
