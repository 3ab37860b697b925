// `usage rebuild`: an enterprise's pre-aggregated usage (the running totals that user-model-usage
// reads, the rollups that the report and the daily trend read, in the enterprise's current time
// zone) recomputed from its raw events, the store's record of every event. The recovery tool for
// aggregates that no longer agree with the events (a restored backup of one table, a bug, a hand
// edit); safe while servers run, which wait for it and then go on.
import { invalidParameter } from "../domain/errors.js";
import type { UsageRepository } from "../storage/usage-repository.js";

export interface RebuildProgress {
  start(totalEvents: number): void;
  update(events: number): void;
  stop(): void;
}

export interface UsageRebuildSummary {
  enterprise_id: string;
  /** The raw events read, each counted once in the rebuilt totals. */
  events: number;
}

export async function rebuildUsage(repository: UsageRepository, enterpriseId: string, progress?: RebuildProgress): Promise<UsageRebuildSummary> {
  if ((await repository.enterpriseSettings(enterpriseId)) === undefined) {
    throw invalidParameter(`--enterprise: enterprise "${enterpriseId}" does not exist (import a directory file first)`);
  }
  progress?.start(await repository.eventCount(enterpriseId));
  try {
    const events = await repository.rebuild(enterpriseId, (read) => progress?.update(read));
    return { enterprise_id: enterpriseId, events };
  } finally {
    progress?.stop();
  }
}
