// The usage export: one row per (local date, member, model) with events in a window, in date order,
// then user_id, then model name, type and source (code point order). The RPC and the CLI both read
// their rows here.
//
// Memory stays flat whatever the window: the database sums one local day's events by (member,
// model) at a time, and that day's rows go out before the next day is read.
import { eachDayBucket, localDateOf, type TimeBucket } from "../domain/local-time.js";
import { compareCodePoints, compareModels } from "../domain/usage-event.js";
import { BASIC, EVENTS, INPUT, modelAmounts, OUTPUT, PAY_GO, type MemberModelSums } from "../domain/usage-totals.js";
import type { DirectoryRepository, MemberProfile } from "../storage/directory-repository.js";
import type { UsageRepository } from "../storage/usage-repository.js";

/** Rows per batch handed out (one ExportUsage message). */
export const EXPORT_BATCH_ROWS = 1_000;

/** One row of the export; the field names are those of the proto's UsageExportRow. */
export interface UsageExportRow {
  date: string;
  userId: string;
  email: string;
  departmentPaths: string[];
  modelName: string;
  modelType: string;
  modelSource: string;
  events: bigint;
  inputTokens: bigint;
  outputTokens: bigint;
  basicAmount: string;
  payGoAmount: string;
  totalAmount: string;
  currency: string;
  formerMember: boolean;
}

export interface UsageExportRequest {
  enterpriseId: string;
  currency: string;
  /** [start, end) in Unix seconds; days are cut at its edges. */
  start: number;
  end: number;
  timeZone: string;
  /** Stops the scan between days (the call's deadline, the caller gone). */
  signal?: AbortSignal;
}

/** The file name of an export: usage-<first local date>-<last local date>.<extension>. */
export function exportFileName(start: number, end: number, timeZone: string, extension: string): string {
  return `usage-${localDateOf(start, timeZone)}-${localDateOf(end - 1, timeZone)}.${extension}`;
}

/** The export's rows in order, in batches of at most EXPORT_BATCH_ROWS, one local day summed at a time. */
export async function* exportUsageRows(usage: UsageRepository, directory: DirectoryRepository,
  request: UsageExportRequest): AsyncGenerator<UsageExportRow[]> {
  const { enterpriseId, start, end, timeZone, signal } = request;
  // Profiles are looked up once per member for the whole export: at most the enterprise's members.
  const profiles = new Map<number, MemberProfile>();
  for (const day of eachDayBucket(start, end, timeZone)) {
    signal?.throwIfAborted();
    const pairs = await usage.memberModelSums(enterpriseId, day.start, day.end);
    yield* batches(await dayRows(day, pairs, profiles, usage, directory, enterpriseId, request.currency));
  }
}

/** A local day's rows, sorted. */
async function dayRows(day: TimeBucket, pairs: readonly MemberModelSums[], profiles: Map<number, MemberProfile>, usage: UsageRepository,
  directory: DirectoryRepository, enterpriseId: string, currency: string): Promise<UsageExportRow[]> {
  if (pairs.length === 0) return [];
  const unknown = [...new Set(pairs.map((pair) => pair.memberKey))].filter((key) => !profiles.has(key));
  if (unknown.length > 0) for (const [key, profile] of await directory.memberProfiles(enterpriseId, unknown)) profiles.set(key, profile);
  const models = await usage.modelsById(new Set(pairs.map((pair) => pair.modelId)));
  const sorted = pairs.map(({ memberKey, modelId, sums }) => ({ profile: profiles.get(memberKey) ?? missingMember(memberKey), model: models.get(modelId)!, sums }))
    .sort((a, b) => compareCodePoints(a.profile.userId, b.profile.userId) || compareModels(a.model, b.model));
  return sorted.map(({ profile, model, sums }) => ({
    date: day.date,
    userId: profile.userId,
    email: profile.email,
    departmentPaths: profile.departmentPaths,
    modelName: model.model_name,
    modelType: model.model_type,
    modelSource: model.model_source,
    events: sums.total(EVENTS),
    inputTokens: sums.total(INPUT),
    outputTokens: sums.total(OUTPUT),
    ...modelAmounts(model, sums.exact(BASIC), sums.exact(PAY_GO)),
    currency,
    formerMember: profile.formerMember,
  }));
}

/** Events always belong to a member of the directory: a missing one is a broken store, not bad input. */
function missingMember(memberKey: number): never {
  throw new Error(`usage export: member_key ${memberKey} has events but no member row`);
}

function* batches(rows: UsageExportRow[]): Generator<UsageExportRow[]> {
  for (let i = 0; i < rows.length; i += EXPORT_BATCH_ROWS) yield rows.slice(i, i + EXPORT_BATCH_ROWS);
}
