// The usage export's rows per (local date, member, model), in order; memory stays flat, a local day summed and sent before the next.
import type { UsageExportRow as ProtoRow } from "../../gen/enterprise_admin/v1/usage_pb.js";
import { eachBucket, zoneIdentity } from "../domain/local-time.js";
import { compareCodePoints, compareModels, type ModelIdentity } from "../domain/usage-event.js";
import { BASIC, EVENTS, INPUT, modelAmounts, OUTPUT, PAY_GO, type MemberModelSums } from "../domain/usage-totals.js";
import { DAY, RollupPeriods, type RollupLayout } from "../domain/usage-rollup.js";
import type { DirectoryRepository, MemberProfile } from "../storage/directory-repository.js";
import type { UsageRepository } from "../storage/usage-repository.js";
import { takeTurn } from "./take-turn.js";

/** Rows per batch handed out (one ExportUsage message) at most. */
export const EXPORT_BATCH_ROWS = 1_000;
/**
 * A batch's text (characters of its rows' strings) at most, unless one row is longer: rows of a member in many deep departments are
 * long, and a message must stay below the 4 MiB gRPC clients take by default (three bytes of UTF-8 a character at most, in the BMP).
 */
const EXPORT_BATCH_TEXT = 1_000_000;
/** A row's text besides its strings: the date, the figures, the amounts, the currency and the fields' tags. */
const ROW_FIGURES_TEXT = 120;

export type UsageExportRow = Omit<ProtoRow, "$typeName" | "$unknown">;

export interface UsageExportRequest {
  enterpriseId: string;
  currency: string;
  /** [start, end) in Unix seconds; days are cut at its edges. */
  start: number;
  end: number;
  timeZone: string;
  /** The enterprise's current rollup layout (settingsWithRollups): a whole day of its zone is read from the day's per-model rows. */
  layout: RollupLayout | undefined;
  /** Stops the scan between days (the call's deadline, the caller gone). */
  signal?: AbortSignal;
}

/** The export's rows in order, in batches of at most EXPORT_BATCH_ROWS and EXPORT_BATCH_TEXT, one local day summed at a time. */
export async function* exportUsageRows(usage: UsageRepository, directory: DirectoryRepository,
  request: UsageExportRequest): AsyncGenerator<UsageExportRow[]> {
  const { enterpriseId, start, end, timeZone, layout, signal } = request;
  const members = new MemberOrder();
  const layoutDays = layout && zoneIdentity(layout.timeZone) === zoneIdentity(timeZone) ? new RollupPeriods(layout, { start, end }) : undefined;
  for (const day of eachBucket(start, end, timeZone, "day")) {
    if (signal) await takeTurn(signal);
    // A day the layout's day rows hold whole (one period, nothing raw); else the raw events: a day of another zone, one cut at the
    // window's edge, or one whose midnight falls inside a quarter hour (RollupPeriods.holdsDay).
    const wholeDay = layoutDays?.cover(day.start, day.end, [DAY]).raw.length === 0;
    const pairs = wholeDay ? await usage.rollups.dayPairs(enterpriseId, day.start) : await usage.memberModelSums(enterpriseId, day.start, day.end);
    if (pairs.length === 0) continue;
    const unknown = members.unknown(pairs);
    if (unknown.length > 0) members.add(await directory.memberProfiles(enterpriseId, unknown));
    const models = await usage.modelsById(new Set(pairs.map((pair) => pair.modelId)));
    let batch: UsageExportRow[] = [];
    let text = 0;
    for (const row of dayRows(day.date, pairs, members, models, request.currency)) {
      const rowText = textOf(row);
      if (batch.length === EXPORT_BATCH_ROWS || (batch.length > 0 && text + rowText > EXPORT_BATCH_TEXT)) {
        yield batch;
        [batch, text] = [[], 0];
      }
      batch.push(row);
      text += rowText;
    }
    if (batch.length > 0) yield batch;
  }
}

function textOf(row: UsageExportRow): number {
  let text = ROW_FIGURES_TEXT + row.userId.length + row.email.length + row.modelName.length + row.modelType.length + row.modelSource.length;
  for (const path of row.departmentPaths) text += path.length;
  return text;
}

/** The export's members so far, each with its place in user_id order (a day's rows sort by places, not user_ids); profiles are read once. */
class MemberOrder {
  private readonly byKey = new Map<number, { profile: MemberProfile; place: number }>();
  /** The same members in user_id order. */
  private readonly inOrder: Array<{ profile: MemberProfile; place: number }> = [];

  unknown(pairs: readonly MemberModelSums[]): number[] {
    return [...new Set(pairs.map((pair) => pair.memberKey))].filter((key) => !this.byKey.has(key));
  }

  add(profiles: ReadonlyMap<number, MemberProfile>): void {
    for (const [key, profile] of profiles) {
      const member = { profile, place: 0 };
      this.byKey.set(key, member);
      this.inOrder.push(member);
    }
    // The sorted members, then the new ones: TimSort merges the new into the sorted run.
    this.inOrder.sort((a, b) => compareCodePoints(a.profile.userId, b.profile.userId)).forEach((member, place) => (member.place = place));
  }

  get(memberKey: number): { profile: MemberProfile; place: number } {
    const member = this.byKey.get(memberKey);
    // Events always belong to a member of the directory: a missing one is a broken store, not bad input.
    if (member === undefined) throw new Error(`usage export: member_key ${memberKey} has events but no member row`);
    return member;
  }
}

/** A local day's rows, in user_id order, then the models' order. */
function dayRows(date: string, pairs: readonly MemberModelSums[], members: MemberOrder, models: ReadonlyMap<number, ModelIdentity>,
  currency: string): UsageExportRow[] {
  const modelOrder = [...new Set(pairs.map((pair) => pair.modelId))].sort((a, b) => compareModels(models.get(a)!, models.get(b)!));
  const modelPlace = new Map(modelOrder.map((id, place) => [id, place]));
  const pairMembers = pairs.map((pair) => members.get(pair.memberKey));
  const places = pairs.map((pair, i) => pairMembers[i]!.place * modelOrder.length + modelPlace.get(pair.modelId)!);
  const order = Array.from(pairs.keys()).sort((a, b) => places[a]! - places[b]!);
  return order.map((i) => {
    const { modelId, sums, row } = pairs[i]!;
    const { profile } = pairMembers[i]!;
    const model = models.get(modelId)!;
    const { basicAmount, payGoAmount, totalAmount } = modelAmounts(model, sums.exact(row, BASIC), sums.exact(row, PAY_GO));
    return {
      date, userId: profile.userId, email: profile.email, departmentPaths: profile.departmentPaths,
      modelName: model.model_name, modelType: model.model_type, modelSource: model.model_source,
      events: sums.total(row, EVENTS), inputTokens: sums.total(row, INPUT), outputTokens: sums.total(row, OUTPUT),
      basicAmount, payGoAmount, totalAmount, currency, formerMember: profile.formerMember,
    };
  });
}
