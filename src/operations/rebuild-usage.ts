// `usage rebuild`: an enterprise's pre-aggregates recomputed from its raw events (the recovery tool); safe while servers run.
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
