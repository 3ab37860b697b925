// Records checked usage events: every event's member looked up first (an unknown one rejects the whole batch), then one ingestion.
import { invalidParameter } from "../domain/errors.js";
import { dayOf } from "../domain/usage-window.js";
import { eventLabel, modelKey, modelOfKey, type UsageEventInput } from "../domain/usage-event.js";
import type { UsageRepository } from "../storage/usage-repository.js";

export interface LabelledEvent {
  event: UsageEventInput;
  /** Where the event came from, for errors: `events[3]`, `line 12`. */
  where: string;
}

/** user_ids per lookup: bounds the one parameter that carries them (UsageRepository.memberKeysByUserIds). */
const MEMBERS_PER_LOOKUP = 10_000;

/** Member keys of an enterprise by user_id, loaded as needed and kept for one ingestion (or one import). */
export class MemberKeys {
  private readonly known = new Map<string, number>();
  constructor(private readonly repository: UsageRepository, private readonly enterpriseId: string) {}

  /** Loads these members; `describe(i)` names the event of `userIds[i]` in the error for an unknown one. */
  async resolveIds(userIds: readonly string[], describe: (index: number) => string): Promise<void> {
    const unseen = [...new Set(userIds)].filter((id) => !this.known.has(id));
    for (let at = 0; at < unseen.length; at += MEMBERS_PER_LOOKUP) {
      for (const row of await this.repository.memberKeysByUserIds(this.enterpriseId, unseen.slice(at, at + MEMBERS_PER_LOOKUP))) this.known.set(row.user_id, row.member_key);
    }
    const i = userIds.findIndex((id) => !this.known.has(id));
    if (i !== -1) throw invalidParameter(`${describe(i)}: user_id: "${userIds[i]}" is not a member of enterprise ${this.enterpriseId}`);
  }

  /** Undefined for a user_id not resolved (resolveIds refuses a batch naming one). */
  key(userId: string): number | undefined {
    return this.known.get(userId);
  }
}

/** What one committed batch did: events stored, and events whose event_id was stored already. */
export interface IngestionOutcome {
  recorded: number;
  duplicates: number;
}

/** Told of every committed batch (the service's metrics). */
export type IngestionObserver = (outcome: IngestionOutcome) => void;

/**
 * Records one batch, all or nothing (rolled back if `checkpoint` throws, asked first and last: the call ended meanwhile); a repeated
 * event_id is a duplicate, not recorded again.
 */
export async function recordUsage(repository: UsageRepository, enterpriseId: string, events: readonly LabelledEvent[],
  checkpoint: () => void = () => {}, observer?: IngestionObserver): Promise<IngestionOutcome> {
  await repository.makeRoomForPending(enterpriseId, events.length);
  const recorded = await repository.ingest(async (tx) => {
    checkpoint();
    const members = new MemberKeys(tx, enterpriseId);
    await members.resolveIds(events.map((e) => e.event.userId), (i) => eventLabel(events[i]!.where, events[i]!.event.eventId));
    const keys = events.map(({ event }) => modelKey(event.modelName, event.modelType, event.modelSource));
    const models = await tx.resolveModels(keys, (i) => modelOfKey(keys[i]!));
    await tx.insertEvents(enterpriseId, events.map(({ event }, i) => ({
      eventId: event.eventId, memberKey: members.key(event.userId)!, modelId: models.get(keys[i]!)!, ts: event.timestamp, day: dayOf(event.timestamp),
      inputTokens: event.inputTokens, outputTokens: event.outputTokens, basicMicros: event.basicMicros, payGoMicros: event.payGoMicros,
    })));
  }, { beforeCommit: checkpoint });
  const outcome = { recorded, duplicates: events.length - recorded };
  observer?.(outcome);
  return outcome;
}
