// UsageService: the usage query (docs/api-rules.md, Member model usage), ingestion, the report, the daily trend and the export.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { UsageService, type MemberUsageSchema, type ModelUsageSchema } from "../../gen/enterprise_admin/v1/usage_pb.js";
import { localDateOf, zoneOrDefault } from "../domain/local-time.js";
import type { GroupFigures } from "../domain/report-cells.js";
import { formatMicros } from "../domain/money.js";
import { checkUsageEvent, compareModels, type ModelIdentity } from "../domain/usage-event.js";
import { checkReportWindow, checkWindow, planWindow } from "../domain/usage-window.js";
import { principalOf } from "../interceptors/auth.js";
import { signalOf, throwIfCallEnded } from "../interceptors/call-signal.js";
import { resolveNamedMembers } from "../operations/named-members.js";
import { recordUsage, type IngestionObserver } from "../operations/record-usage.js";
import { exportUsageRows } from "../operations/usage-export.js";
import type { UsageReports } from "../operations/usage-report.js";
import type { UsageRepository } from "../storage/usage-repository.js";
import type { DirectoryRepository } from "../storage/directory-repository.js";
import { answerCount, BASIC, EVENTS, exactSum, INPUT, modelAmounts, OUTPUT, PAY_GO } from "../domain/usage-totals.js";
import type { WindowSums } from "../domain/usage-window-sums.js";

/** `ingested` hears of every committed RecordUsageEvents batch (the service's metrics). */
export function usageService(usage: UsageRepository, directory: DirectoryRepository, reports: UsageReports,
  ingested?: IngestionObserver): ServiceImpl<typeof UsageService> {
  return {
    async queryUserModelUsage(request, context) {
      const { enterpriseId } = principalOf(context);
      const window = checkWindow(request.startTime, request.endTime);
      const [{ members, notFoundUserIds, notFoundEmails }, settings] = await Promise.all([
        resolveNamedMembers(usage, enterpriseId, request, true),
        usage.enterpriseSettings(enterpriseId),
      ]);

      const plan = planWindow(window.start, window.end, settings.layout !== undefined);
      throwIfCallEnded(context);
      const sums = await usage.sumUsage(members.map((m) => m.member_key), plan);
      const models = await usage.modelsById(sums.modelIds);
      // The models' slots in entry order (compareModels): the few models are sorted once, not compared in every member's entries.
      const slots = sums.modelIds.map((_, i) => i).sort((a, b) => compareModels(models.get(sums.modelIds[a]!)!, models.get(sums.modelIds[b]!)!));
      const items: MessageInitShape<typeof MemberUsageSchema>[] = members.map((member, position) => ({
        userId: member.user_id, email: member.email, accountType: Number(member.account_type),
        modelUsage: modelUsage(models, slots, sums, position, settings.currency), formerMember: member.removed_at !== null,
      }));
      return { items, notFoundUserIds, notFoundEmails };
    },

    async recordUsageEvents(request, context) {
      const { enterpriseId } = principalOf(context);
      const events = request.events.map((event, index) => ({
        event: checkUsageEvent({
          event_id: event.eventId, user_id: event.userId, model_name: event.modelName, model_type: event.modelType,
          model_source: event.modelSource, timestamp: event.timestamp, input_tokens: event.inputTokens,
          output_tokens: event.outputTokens, basic_amount: event.basicAmount, pay_go_amount: event.payGoAmount,
        }, `events[${index}]`),
        where: `events[${index}]`,
      }));
      return recordUsage(usage, enterpriseId, events, () => throwIfCallEnded(context), ingested);
    },

    async getUsageReport(request, context) {
      const report = await reports.report(principalOf(context).enterpriseId, request, signalOf(context));
      return {
        ...report,
        buckets: report.buckets.map((bucket) => ({
          startTime: BigInt(bucket.start), endTime: BigInt(bucket.end), date: bucket.date,
          // Assigned, not spread: spreading the names and the figures into one object took seconds for a report of 100,000 figures.
          groups: bucket.groups.map((g) => Object.assign(figures(g.figures), g.label)),
        })),
      };
    },

    async getCoreMetrics(request, context) {
      const metrics = await reports.coreMetrics(principalOf(context).enterpriseId, request, signalOf(context));
      return { ...metrics, items: metrics.items.map((day) => Object.assign(figures(day), { date: day.date })) };
    },

    async *exportUsage(request, context) {
      const { enterpriseId } = principalOf(context);
      // A report's limits: an export is its day buckets' rows.
      const { start, end } = checkReportWindow(request.startTime, request.endTime, "day");
      const settings = await usage.settingsWithRollups(enterpriseId);
      const timeZone = zoneOrDefault(request.timeZone, settings.time_zone, "time_zone");
      // The name a REST download is saved under (the other transports carry it as a header too): usage-<first date>-<last date>.<format>.
      const fileName = `usage-${localDateOf(start, timeZone)}-${localDateOf(end - 1, timeZone)}.${request.format || "csv"}`;
      context.responseHeader.set("content-disposition", `attachment; filename="${fileName}"`);
      const asked = { enterpriseId, currency: settings.currency, start, end, timeZone, layout: settings.layout, signal: signalOf(context) };
      for await (const rows of exportUsageRows(usage, directory, asked)) yield { rows };
    },
  };
}

/** A member's entries (the models with events in the window), in slot order. */
function modelUsage(models: ReadonlyMap<number, ModelIdentity>, slots: readonly number[], sums: WindowSums, member: number,
  currency: string): MessageInitShape<typeof ModelUsageSchema>[] {
  const entries: MessageInitShape<typeof ModelUsageSchema>[] = [];
  for (const slot of slots) {
    if (!sums.hasEvents(slot, member)) continue;
    const model = models.get(sums.modelIds[slot]!)!;
    // Named, not spread: spreading the amounts into the entry is several times slower.
    const { basicAmount, payGoAmount, totalAmount } = modelAmounts(model, sums.sum(slot, member, BASIC), sums.sum(slot, member, PAY_GO));
    entries.push({
      modelName: model.model_name, modelType: model.model_type, modelSource: model.model_source,
      usage: { inputTokens: BigInt(sums.sum(slot, member, INPUT)), outputTokens: BigInt(sums.sum(slot, member, OUTPUT)) },
      amount: { basicAmount, payGoAmount, totalAmount, currency },
    });
  }
  return entries;
}

/** A group's or a day's figures in the API's shape: exact integers, amounts as 6-decimal strings. */
function figures({ sums, row, activeMembers }: GroupFigures) {
  const basic = sums.exact(row, BASIC);
  const payGo = sums.exact(row, PAY_GO);
  return {
    events: answerCount(sums.exact(row, EVENTS), "events"), activeMembers: BigInt(activeMembers),
    inputTokens: answerCount(sums.exact(row, INPUT), "input_tokens"), outputTokens: answerCount(sums.exact(row, OUTPUT), "output_tokens"),
    basicAmount: formatMicros(basic), payGoAmount: formatMicros(payGo),
    totalAmount: formatMicros(exactSum(basic, payGo)),
  };
}
