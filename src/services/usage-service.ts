// UsageService: the documented usage query (spec 4.1, contracts section 6) and event ingestion.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { UsageService, type MemberUsageSchema, type ModelUsageSchema } from "../../gen/enterprise_admin/v1/usage_pb.js";
import { uniqueInOrder } from "../domain/batch.js";
import { invalidParameter } from "../domain/errors.js";
import { formatMicros } from "../domain/money.js";
import { checkUsageEvent, compareCodePoints } from "../domain/usage-event.js";
import { checkWindow, planWindow } from "../domain/usage-window.js";
import type { Handlers } from "../interceptors/call-pipeline.js";
import { recordUsage } from "../operations/record-usage.js";
import type { ModelIdentity } from "../domain/usage-event.js";
import type { MemberRow, UsageRepository, UsageSumRow } from "../storage/usage-repository.js";

export const MAX_QUERY_MEMBERS = 100;


export function usageHandlers(usage: UsageRepository): Handlers<typeof UsageService> {
  return {
    async queryUserModelUsage(request, { principal }) {
      const window = checkWindow(request.startTime, request.endTime);
      const userIds = uniqueInOrder(request.userIds);
      const emails = uniqueCaseInsensitive(request.emails);
      const named = userIds.length + emails.length;
      if (named === 0) throw invalidParameter("user_ids, emails: at least one of them must name a member");
      if (named > MAX_QUERY_MEMBERS) {
        throw invalidParameter(`user_ids plus emails after de-duplication: ${named} > ${MAX_QUERY_MEMBERS}`);
      }

      const enterpriseId = principal.enterpriseId;
      const [byId, byEmail, currency] = await Promise.all([
        usage.membersByUserIds(enterpriseId, userIds),
        usage.membersByFoldedEmails(enterpriseId, emails.map((e) => e.toLowerCase())),
        usage.currency(enterpriseId),
      ]);
      const memberById = new Map(byId.map((m) => [m.user_id, m]));
      const memberByEmail = new Map(byEmail.map((m) => [m.email_folded, m]));

      // Order of first mention, user_ids first; a member named by id and by e-mail appears once.
      const members: MemberRow[] = [];
      const listed = new Set<number>();
      const add = (member: MemberRow) => {
        if (!listed.has(member.member_key)) {
          listed.add(member.member_key);
          members.push(member);
        }
      };
      const notFoundUserIds = userIds.filter((id) => (memberById.has(id) ? (add(memberById.get(id)!), false) : true));
      const notFoundEmails = emails.filter((e) => {
        const member = memberByEmail.get(e.toLowerCase());
        return member ? (add(member), false) : true;
      });

      const plan = planWindow(window.start, window.end);
      const sums = await usage.sumUsage(members.map((m) => m.member_key), plan);
      const sumsByMember = new Map<number, UsageSumRow[]>();
      for (const row of sums) {
        const list = sumsByMember.get(row.member_key);
        if (list) list.push(row);
        else sumsByMember.set(row.member_key, [row]);
      }
      const models = await usage.modelsById(sums.map((row) => row.model_id));
      const rankOf = modelRanks(models, sums);
      const items: MessageInitShape<typeof MemberUsageSchema>[] = members.map((member) => ({
        userId: member.user_id,
        email: member.email,
        accountType: Number(member.account_type),
        modelUsage: modelUsage(models, rankOf, sumsByMember.get(member.member_key) ?? [], currency ?? ""),
      }));
      return { items, notFoundUserIds, notFoundEmails };
    },

    async recordUsageEvents(request, { principal }) {
      const events = request.events.map((event, index) => ({
        event: checkUsageEvent({
          event_id: event.eventId, user_id: event.userId, model_name: event.modelName, model_type: event.modelType,
          model_source: event.modelSource, timestamp: event.timestamp, input_tokens: event.inputTokens,
          output_tokens: event.outputTokens, basic_amount: event.basicAmount, pay_go_amount: event.payGoAmount,
        }, `events[${index}]`),
        where: `events[${index}]`,
      }));
      return recordUsage(usage, principal.enterpriseId, events);
    },
  };
}

/**
 * Each model of the answer's rank in the order of its entries: model_name, model_type, model_source,
 * in code point order. The few distinct models are compared once, instead of three string
 * comparisons for each pair of a member's entries (about 1,800 entries in a 100-member answer).
 */
function modelRanks(models: ReadonlyMap<number, ModelIdentity>, rows: readonly UsageSumRow[]): Map<number, number> {
  const ids = new Set(rows.map((row) => row.model_id));
  const ordered = [...ids].map((id) => ({ id, model: models.get(id)! })).sort((a, b) => compareCodePoints(a.model.model_name, b.model.model_name)
    || compareCodePoints(a.model.model_type, b.model.model_type)
    || compareCodePoints(a.model.model_source, b.model.model_source));
  return new Map(ordered.map(({ id }, rank) => [id, rank]));
}

/** A member's entries in model rank order (modelRanks); Custom models are never charged. */
function modelUsage(models: ReadonlyMap<number, ModelIdentity>, rankOf: ReadonlyMap<number, number>, rows: UsageSumRow[],
  currency: string): MessageInitShape<typeof ModelUsageSchema>[] {
  rows.sort((a, b) => rankOf.get(a.model_id)! - rankOf.get(b.model_id)!);
  return rows.map((row) => {
    const model = models.get(row.model_id)!;
    const charged = model.model_source !== "Custom";
    const basic = charged ? row.basic_micros : 0;
    const payGo = charged ? row.pay_go_micros : 0;
    return {
      modelName: model.model_name,
      modelType: model.model_type,
      modelSource: model.model_source,
      usage: { inputTokens: BigInt(row.input_tokens), outputTokens: BigInt(row.output_tokens) },
      amount: {
        basicAmount: formatMicros(basic),
        payGoAmount: formatMicros(payGo),
        totalAmount: formatMicros(exactSum(basic, payGo)),
        currency,
      },
    };
  });
}

/** a + b, exactly: a number while the sum stays below 2^53. */
function exactSum(a: number | bigint, b: number | bigint): number | bigint {
  if (typeof a === "number" && typeof b === "number" && a + b <= Number.MAX_SAFE_INTEGER) return a + b;
  return BigInt(a) + BigInt(b);
}

/** De-duplicates e-mails case-insensitively, keeping the first spelling (it is what not_found echoes). */
function uniqueCaseInsensitive(emails: readonly string[]): string[] {
  const seen = new Set<string>();
  return emails.filter((email) => {
    const folded = email.toLowerCase();
    if (seen.has(folded)) return false;
    seen.add(folded);
    return true;
  });
}
