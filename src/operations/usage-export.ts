// The usage export: one row per (local date, member, model) with events in a window, in date order,
// then user_id, then model name, type and source (code point order). The RPC and the CLI both read
// their rows here.
//
// Memory stays flat whatever the window: the raw events arrive in (UTC day, member, time) order, a
// local day overlaps at most three UTC days, so only the local days the current UTC day touches are
// summed at a time, and a local day's rows go out as soon as every UTC day it touches has been read.
import { eachDayBucket, localDateOf, type TimeBucket } from "../domain/local-time.js";
import { compareCodePoints, compareModels } from "../domain/usage-event.js";
import { BASIC, EVENTS, INPUT, ModelSums, modelAmounts, OUTPUT, PAY_GO } from "../domain/usage-totals.js";
import { DAY_SECONDS } from "../domain/usage-window.js";
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
  /** Stops the scan between pages (the call's deadline, the caller gone). */
  signal?: AbortSignal;
}

interface OpenDay {
  bucket: TimeBucket;
  /** member_key -> model_id -> sums. */
  members: Map<number, Map<number, ModelSums>>;
}

/** The file name of an export: usage-<first local date>-<last local date>.<extension>. */
export function exportFileName(start: number, end: number, timeZone: string, extension: string): string {
  return `usage-${localDateOf(start, timeZone)}-${localDateOf(end - 1, timeZone)}.${extension}`;
}

/** The export's rows in order, in batches of at most EXPORT_BATCH_ROWS. */
export async function* exportUsageRows(usage: UsageRepository, directory: DirectoryRepository,
  request: UsageExportRequest): AsyncGenerator<UsageExportRow[]> {
  const { enterpriseId, start, end, timeZone, signal } = request;
  const days = eachDayBucket(start, end, timeZone);
  const open: OpenDay[] = [];
  /** Opens the local days that begin before `until`, skipping those over before `from` (no event is in them). */
  const openUntil = (from: number, until: number) => {
    for (;;) {
      const last = open[open.length - 1];
      if (last && last.bucket.end >= Math.min(until, end)) return;
      const next = days.next();
      if (next.done) return;
      if (next.value.end > from) open.push({ bucket: next.value, members: new Map() });
    }
  };
  // Profiles are looked up once per member for the whole export: at most the enterprise's members.
  const profiles = new Map<number, MemberProfile>();
  const rowsOf = (day: OpenDay) => dayRows(day, profiles, usage, directory, enterpriseId, request.currency);

  let utcDay = -1;
  for await (const page of usage.eventsInWindow(enterpriseId, start, end)) {
    signal?.throwIfAborted();
    for (const event of page) {
      const eventDay = Math.floor(event.ts / DAY_SECONDS);
      if (eventDay !== utcDay) {
        // Every event before this UTC day has been read: the local days ending by its start are complete.
        while (open.length > 0 && open[0]!.bucket.end <= eventDay * DAY_SECONDS) yield* batches(await rowsOf(open.shift()!));
        utcDay = eventDay;
        openUntil(eventDay * DAY_SECONDS, (eventDay + 1) * DAY_SECONDS);
      }
      const day = open.find((d) => event.ts < d.bucket.end)!;
      let models = day.members.get(event.memberKey);
      if (!models) day.members.set(event.memberKey, models = new Map());
      let sums = models.get(event.modelId);
      if (!sums) models.set(event.modelId, sums = new ModelSums());
      sums.add(INPUT, event.inputTokens);
      sums.add(OUTPUT, event.outputTokens);
      sums.add(BASIC, event.basicMicros);
      sums.add(PAY_GO, event.payGoMicros);
      sums.add(EVENTS, 1);
    }
  }
  for (const day of open) yield* batches(await rowsOf(day));
}

/** A complete local day's rows, sorted. */
async function dayRows(day: OpenDay, profiles: Map<number, MemberProfile>, usage: UsageRepository,
  directory: DirectoryRepository, enterpriseId: string, currency: string): Promise<UsageExportRow[]> {
  if (day.members.size === 0) return [];
  const unknown = [...day.members.keys()].filter((key) => !profiles.has(key));
  if (unknown.length > 0) for (const [key, profile] of await directory.memberProfiles(enterpriseId, unknown)) profiles.set(key, profile);
  const modelIds = new Set<number>();
  for (const models of day.members.values()) for (const id of models.keys()) modelIds.add(id);
  const models = await usage.modelsById(modelIds);

  const rows: UsageExportRow[] = [];
  const members = [...day.members.entries()].map(([key, sums]) => ({ profile: profiles.get(key) ?? missingMember(key), sums }))
    .sort((a, b) => compareCodePoints(a.profile.userId, b.profile.userId));
  for (const { profile, sums } of members) {
    const entries = [...sums.entries()].map(([id, s]) => ({ model: models.get(id)!, sums: s })).sort((a, b) => compareModels(a.model, b.model));
    for (const { model, sums: s } of entries) {
      rows.push({
        date: day.bucket.date,
        userId: profile.userId,
        email: profile.email,
        departmentPaths: profile.departmentPaths,
        modelName: model.model_name,
        modelType: model.model_type,
        modelSource: model.model_source,
        events: BigInt(s.exact(EVENTS)),
        inputTokens: BigInt(s.exact(INPUT)),
        outputTokens: BigInt(s.exact(OUTPUT)),
        ...modelAmounts(model, s.exact(BASIC), s.exact(PAY_GO)),
        currency,
        formerMember: profile.formerMember,
      });
    }
  }
  return rows;
}

/** Events always belong to a member of the directory: a missing one is a broken store, not bad input. */
function missingMember(memberKey: number): never {
  throw new Error(`usage export: member_key ${memberKey} has events but no member row`);
}

function* batches(rows: UsageExportRow[]): Generator<UsageExportRow[]> {
  for (let i = 0; i < rows.length; i += EXPORT_BATCH_ROWS) yield rows.slice(i, i + EXPORT_BATCH_ROWS);
}
