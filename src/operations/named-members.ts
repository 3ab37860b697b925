// Members named by user_ids and emails, with the rules of the usage query (docs/api-rules.md): ids
// de-duplicated exactly, e-mails by the matching rule, at most 100 of both together; the known ones
// in order of first mention (ids first), a member named twice once; the unknown ones as sent. The
// usage query and the usage report share these rules.
import { uniqueInOrder } from "../domain/batch.js";
import { foldEmail } from "../domain/email-match.js";
import { invalidParameter } from "../domain/errors.js";
import type { MemberRow, UsageRepository } from "../storage/usage-repository.js";

export const MAX_QUERY_MEMBERS = 100;

export interface NamedMembers {
  /** Known members, in order of first mention. */
  members: MemberRow[];
  notFoundUserIds: string[];
  notFoundEmails: string[];
}

interface NamingRequest {
  userIds: readonly string[];
  emails: readonly string[];
}

/** The user ids and e-mails named, each once; more than MAX_QUERY_MEMBERS is refused (no store needed: a report checks it before its turn). */
export function namedIn(request: NamingRequest): { userIds: string[]; emails: string[] } {
  const userIds = uniqueInOrder(request.userIds);
  const emails = uniqueByFoldedEmail(request.emails);
  const named = userIds.length + emails.length;
  if (named > MAX_QUERY_MEMBERS) throw invalidParameter(`user_ids plus emails after de-duplication: ${named} > ${MAX_QUERY_MEMBERS}`);
  return { userIds, emails };
}

/**
 * Resolves the members named by `userIds` and `emails` in the enterprise. With `required`, naming
 * none is an error; without, naming none gives undefined (no filter).
 */
export async function resolveNamedMembers(usage: UsageRepository, enterpriseId: string, request: NamingRequest, required: true): Promise<NamedMembers>;
export async function resolveNamedMembers(usage: UsageRepository, enterpriseId: string, request: NamingRequest, required: false): Promise<NamedMembers | undefined>;
export async function resolveNamedMembers(usage: UsageRepository, enterpriseId: string, request: NamingRequest, required: boolean): Promise<NamedMembers | undefined> {
  const { userIds, emails } = namedIn(request);
  if (userIds.length + emails.length === 0) {
    if (required) throw invalidParameter("user_ids, emails: at least one of them must name a member");
    return undefined;
  }
  const [byId, byEmail] = await Promise.all([
    usage.membersByUserIds(enterpriseId, userIds),
    usage.membersByFoldedEmails(enterpriseId, emails.map(foldEmail)),
  ]);
  const memberById = new Map(byId.map((m) => [m.user_id, m]));
  const memberByEmail = new Map(byEmail.map((m) => [m.email_folded, m]));

  const members: MemberRow[] = [];
  const listed = new Set<number>();
  const add = (member: MemberRow) => {
    if (!listed.has(member.member_key)) {
      listed.add(member.member_key);
      members.push(member);
    }
  };
  const notFoundUserIds = userIds.filter((id) => {
    const member = memberById.get(id);
    return member ? (add(member), false) : true;
  });
  const notFoundEmails = emails.filter((e) => {
    const member = memberByEmail.get(foldEmail(e));
    return member ? (add(member), false) : true;
  });
  return { members, notFoundUserIds, notFoundEmails };
}

/** De-duplicates e-mails by the matching rule, keeping the first spelling (it is what not_found echoes). */
function uniqueByFoldedEmail(emails: readonly string[]): string[] {
  const seen = new Set<string>();
  return emails.filter((email) => {
    const folded = foldEmail(email);
    if (seen.has(folded)) return false;
    seen.add(folded);
    return true;
  });
}
