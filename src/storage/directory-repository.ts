// Enterprises and members: the parts of the directory that are not the department tree.
import type { Insertable, Kysely, Selectable } from "kysely";
import { foldEmail } from "../domain/email-match.js";
import { compareCodePoints } from "../domain/usage-event.js";
import type { EnterpriseTable, Schema } from "./schema.js";

export type EnterpriseRow = Selectable<EnterpriseTable>;

/** A stored member as the import compares it with the file: current, or former (removed_at set). */
export interface StoredMember {
  user_id: string;
  email: string;
  /** The e-mail as it matches (domain/email-match.ts); unique among current members. */
  email_folded: string;
  removed_at: number | null;
}

export interface MemberInput {
  user_id: string;
  email: string;
  account_type: number;
  department_ids: readonly string[];
}

export class DirectoryRepository {
  constructor(private readonly db: Kysely<Schema>) {}

  async findEnterprise(enterpriseId: string): Promise<EnterpriseRow | undefined> {
    return this.db.selectFrom("enterprise").selectAll().where("enterprise_id", "=", enterpriseId).executeTakeFirst();
  }

  /** Part of every directory import: a new version of the enterprise's directory begins. */
  async upsertEnterprise(row: Insertable<EnterpriseTable>): Promise<void> {
    await this.db.insertInto("enterprise").values(row)
      .onConflict((oc) => oc.column("enterprise_id").doUpdateSet((eb) => ({
        name: eb.ref("excluded.name"),
        currency: eb.ref("excluded.currency"),
        time_zone: eb.ref("excluded.time_zone"),
        directory_version: eb("enterprise.directory_version", "+", 1),
      })))
      .execute();
  }

  /** Every member of the enterprise, current and former, in no particular order. */
  async listMembers(enterpriseId: string): Promise<StoredMember[]> {
    const rows = await this.db.selectFrom("member").select(["user_id", "email", "email_folded", "removed_at"]).where("enterprise_id", "=", enterpriseId).execute();
    return rows.map((row) => ({ ...row, removed_at: row.removed_at === null ? null : Number(row.removed_at) }));
  }

  /**
   * Makes these members former members: the row (and so its usage history) stays, marked removed at
   * `now`; its departments are dropped, and its e-mail no longer matches (the index on e-mails covers
   * current members only, so another member may take it).
   */
  async removeMembers(enterpriseId: string, userIds: readonly string[], now: number): Promise<void> {
    for (let i = 0; i < userIds.length; i += 500) {
      const chunk = userIds.slice(i, i + 500);
      await this.db.updateTable("member").set({ removed_at: now })
        .where("enterprise_id", "=", enterpriseId).where("user_id", "in", chunk).execute();
      await this.db.deleteFrom("member_department")
        .where("enterprise_id", "=", enterpriseId).where("user_id", "in", chunk).execute();
    }
  }

  /** Upserts members (a former member given again is current again) and replaces the department memberships of each. */
  async upsertMembers(enterpriseId: string, members: readonly MemberInput[]): Promise<void> {
    for (let i = 0; i < members.length; i += 500) {
      const chunk = members.slice(i, i + 500);
      await this.db.insertInto("member")
        .values(chunk.map((m) => ({
          enterprise_id: enterpriseId,
          user_id: m.user_id,
          email: m.email,
          email_folded: foldEmail(m.email),
          account_type: m.account_type,
          removed_at: null,
        })))
        .onConflict((oc) => oc.columns(["enterprise_id", "user_id"]).doUpdateSet((eb) => ({
          email: eb.ref("excluded.email"),
          email_folded: eb.ref("excluded.email_folded"),
          account_type: eb.ref("excluded.account_type"),
          removed_at: eb.ref("excluded.removed_at"),
        })))
        .execute();
      await this.db.deleteFrom("member_department")
        .where("enterprise_id", "=", enterpriseId)
        .where("user_id", "in", chunk.map((m) => m.user_id))
        .execute();
      const memberships = chunk.flatMap((m) => [...new Set(m.department_ids)].map((department_id) =>
        ({ enterprise_id: enterpriseId, user_id: m.user_id, department_id })));
      // Statements of at most 500 rows (1,500 parameters), however many departments the chunk's members have.
      for (let j = 0; j < memberships.length; j += 500) await this.db.insertInto("member_department").values(memberships.slice(j, j + 500)).execute();
    }
  }

  /**
   * The members with these keys, each with the stored full paths of its departments (sorted in code
   * point order), by member_key. Two queries per 5,000 keys, whatever the number of departments.
   */
  async memberProfiles(enterpriseId: string, memberKeys: readonly number[]): Promise<Map<number, MemberProfile>> {
    const profiles = new Map<number, MemberProfile>();
    for (let i = 0; i < memberKeys.length; i += PROFILE_CHUNK) {
      const keys = memberKeys.slice(i, i + PROFILE_CHUNK);
      const members = await this.db.selectFrom("member").select(["member_key", "user_id", "email", "removed_at"])
        .where("enterprise_id", "=", enterpriseId).where("member_key", "in", keys).execute();
      const byUserId = new Map<string, MemberProfile>();
      for (const m of members) {
        const profile = { userId: m.user_id, email: m.email, departmentPaths: [] as string[], formerMember: m.removed_at !== null };
        profiles.set(Number(m.member_key), profile);
        byUserId.set(m.user_id, profile);
      }
      if (byUserId.size === 0) continue;
      const paths = await this.db.selectFrom("member_department as md")
        .innerJoin("department as d", (join) => join.onRef("d.enterprise_id", "=", "md.enterprise_id").onRef("d.department_id", "=", "md.department_id"))
        .select(["md.user_id", "d.full_path"])
        .where("md.enterprise_id", "=", enterpriseId).where("md.user_id", "in", [...byUserId.keys()]).execute();
      for (const row of paths) byUserId.get(row.user_id)!.departmentPaths.push(row.full_path);
    }
    for (const profile of profiles.values()) profile.departmentPaths.sort(compareCodePoints);
    return profiles;
  }
}

/** Keys per lookup: well under SQLite's and PostgreSQL's limits on a statement's parameters. */
const PROFILE_CHUNK = 5_000;

/** A member as the usage export names it. */
export interface MemberProfile {
  userId: string;
  email: string;
  /** The full_path of each of the member's departments (none for a former member). */
  departmentPaths: string[];
  /** Removed from the directory by `import directory --prune`; its history stays. */
  formerMember: boolean;
}
