// `import usage` in two passes: a check, so a bad file writes nothing; then chunked commits, which a rerun after a crash skips as repeats.
import { inputFileSize } from "./input-file.js";
import { on } from "node:events";
import { Worker } from "node:worker_threads";
import { invalidParameter } from "../domain/errors.js";
import { eventLabel, modelOfKey } from "../domain/usage-event.js";
import { dayOf } from "../domain/usage-window.js";
import type { UsageEventRow, UsageRepository } from "../storage/usage-repository.js";
import { MemberKeys } from "./record-usage.js";
import { checkUsageFile } from "./usage-file-check.js";
import type { Progress } from "./progress.js";
import { bundledWorkerUrl } from "./worker-bundle.js";
import { DEFAULT_TUNING, VALUES_PER_EVENT, type EventColumns, type UsageFileMessage, type UsageFileTuning, type UsageFileWorkerData } from "./usage-file-worker.js";

export interface UsageImportSummary {
  enterprise_id: string;
  lines: number;
  recorded: number;
  duplicates: number;
}

export async function importUsage(repository: UsageRepository, enterpriseId: string, path: string, progress?: Progress,
  tuning: UsageFileTuning = DEFAULT_TUNING): Promise<UsageImportSummary> {
  await repository.enterpriseSettings(enterpriseId, "--enterprise");
  const totalBytes = await inputFileSize(path);
  const thread = await bundledWorkerUrl(new URL("./usage-file-worker.mjs", import.meta.url));
  // In first-line order, so that an unknown user_id is named by the earliest line.
  const users = await checkUsageFile(path, totalBytes, thread);
  // An empty file is checked and done: it has no bytes to read (and no last byte to end a read at).
  if (totalBytes === 0) return { enterprise_id: enterpriseId, lines: 0, recorded: 0, duplicates: 0 };
  const userIds = [...users.keys()];
  const members = new MemberKeys(repository, enterpriseId);
  await members.resolveIds(userIds, (i) => eventLabel(`line ${users.get(userIds[i]!)!.line}`, users.get(userIds[i]!)!.eventId));
  const worker = new Worker(thread, { workerData: { task: "read", path, bytes: totalBytes, batchEvents: tuning.batchEvents } satisfies UsageFileWorkerData });
  const messages = on(worker, "message")[Symbol.asyncIterator]() as AsyncIterator<[UsageFileMessage]>;
  const next = async (): Promise<Exclude<UsageFileMessage, { kind: "invalid" | "failed" }>> => {
    const [message] = (await messages.next()).value as [UsageFileMessage];
    // Only a file changed in place since its check gets here (its checked bytes are all that is read).
    if (message.kind === "invalid") {
      throw invalidParameter(`${path} changed while it was imported, after its check: ${message.message}; the chunks committed before it stay (run the import again once the file is whole)`);
    }
    if (message.kind === "failed") throw new Error(`reading ${path}: ${message.message}`);
    return message;
  };
  const keys = new FileKeys(members);
  let events = 0;
  let recorded = 0;
  progress?.start(totalBytes);
  try {
    // One transaction per chunk: batches of events up to the first that reaches tuning.chunkEvents. The batch after a full chunk is
    // awaited once it has committed, so a file that fails to read on costs no committed work and the write lock is not held meanwhile.
    let message = await next();
    while (message.kind === "events") {
      recorded += await repository.ingestImportChunk(async (tx) => {
        for (let inChunk = 0; message.kind === "events"; message = await next()) {
          worker.postMessage("more");
          await tx.insertEvents(enterpriseId, await keys.toRows(tx, message.events));
          inChunk += message.events.count;
          events += message.events.count;
          progress?.update(message.bytesRead, events);
          if (inChunk >= tuning.chunkEvents) break;
        }
      });
      if (message.kind === "events") message = await next();
    }
    if (recorded > 0) await repository.tidyAfterImport();
    return { enterprise_id: enterpriseId, lines: message.lines, recorded, duplicates: events - recorded };
  } finally {
    await worker.terminate();
    progress?.stop();
  }
}

/** The file's user and model dictionaries (see EventColumns), resolved to member keys and model ids as they grow. */
class FileKeys {
  /** By the file's user and model indexes. */
  private readonly memberKeys: number[] = [];
  private readonly modelIds: number[] = [];

  constructor(private readonly members: MemberKeys) {}

  /** Rows for a batch of checked events, its new models resolved (made, when new to the store, in `tx`). */
  async toRows(tx: UsageRepository, batch: EventColumns): Promise<UsageEventRow[]> {
    for (const userId of batch.newUserIds) {
      const key = this.members.key(userId);
      // A file rewritten in place since its check can name a user_id the check never saw.
      if (key === undefined) throw invalidParameter(`user_id "${userId}": not in the file when it was checked (the file changed during the import); run it again`);
      this.memberKeys.push(key);
    }
    if (batch.newModelKeys.length > 0) {
      const models = await tx.resolveModels(batch.newModelKeys, (i) => modelOfKey(batch.newModelKeys[i]!));
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
