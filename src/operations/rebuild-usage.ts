// `usage rebuild`: recomputes an enterprise's pre-aggregates (the usage query's running totals, the report's rollups in its current time
// zone) from its raw events. For aggregates that disagree with the events (a restored table, a bug, a hand edit); safe while servers run.
import type { Progress } from "./progress.js";
import type { UsageRepository } from "../storage/usage-repository.js";

export interface UsageRebuildSummary {
  enterprise_id: string;
  /** The raw events read, each counted once in the rebuilt totals. */
  events: number;
}

export async function rebuildUsage(repository: UsageRepository, enterpriseId: string, progress?: Progress): Promise<UsageRebuildSummary> {
  await repository.enterpriseSettings(enterpriseId, "--enterprise");
  progress?.start(await repository.eventCount(enterpriseId));
  try {
    const events = await repository.rebuild(enterpriseId, (read) => progress?.update(read));
    return { enterprise_id: enterpriseId, events };
  } finally {
    progress?.stop();
  }
}
