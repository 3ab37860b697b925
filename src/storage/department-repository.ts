// Departments of one enterprise: batch reads, children, keyword search, and upserts and deletes for the import.
import { sql, type Kysely, type Selectable } from "kysely";
import { reusedQuery } from "./reused-query.js";
import { ROOT_PARENT_ID } from "../domain/department-tree.js";
import { foldName } from "../domain/text-rules.js";
import type { DepartmentTable, Schema } from "./schema.js";

export type DepartmentRow = Omit<Selectable<DepartmentTable>, "name_folded" | "enterprise_id">;

const columns = ["department_id", "parent_department_id", "name", "full_path", "depth"] as const;

export class DepartmentRepository {
  /** The batch read of every REST and RPC batch-get: compiled once per list length (reused-query.ts). */
  private readonly byIds: (enterpriseId: string, ids: readonly string[], withRoot: boolean) => Promise<DepartmentRow[]>;

  constructor(private readonly db: Kysely<Schema>) {
    this.byIds = reusedQuery(db, (enterpriseId: string, ids: readonly string[], withRoot: boolean) => db
      .selectFrom("department")
      .select(columns)
      .where("enterprise_id", "=", enterpriseId)
      .where((eb) => {
        const matches = [];
        if (ids.length > 0) matches.push(eb("department_id", "in", ids));
        if (withRoot) matches.push(eb("parent_department_id", "=", ROOT_PARENT_ID));
        return eb.or(matches);
      }));
  }

  /** The departments with these IDs, plus the root when `withRoot`; one query, in no particular order. */
  async findByIds(enterpriseId: string, ids: readonly string[], withRoot: boolean): Promise<DepartmentRow[]> {
    if (ids.length === 0 && !withRoot) return [];
    return this.byIds(enterpriseId, ids, withRoot);
  }

  async exists(enterpriseId: string, departmentId: string): Promise<boolean> {
    const row = await this.db.selectFrom("department").select("department_id")
      .where("enterprise_id", "=", enterpriseId).where("department_id", "=", departmentId)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Children of one parent ordered by department_id, starting after `after`; reads `limit` rows. */
  async listChildren(enterpriseId: string, parentId: string, after: string | undefined, limit: number): Promise<DepartmentRow[]> {
    let query = this.db.selectFrom("department").select(columns)
      .where("enterprise_id", "=", enterpriseId).where("parent_department_id", "=", parentId);
    if (after !== undefined) query = query.where("department_id", ">", after);
    return query.orderBy("department_id").limit(limit).execute();
  }

  /** Departments whose folded name contains the folded keyword, ordered by department_id. */
  async searchByName(enterpriseId: string, keywordFolded: string, after: string | undefined, limit: number): Promise<DepartmentRow[]> {
    let query = this.db.selectFrom("department").select(columns)
      .where("enterprise_id", "=", enterpriseId)
      .where(sql<boolean>`name_folded like ${`%${escapeLike(keywordFolded)}%`} escape '\\'`);
    if (after !== undefined) query = query.where("department_id", ">", after);
    return query.orderBy("department_id").limit(limit).execute();
  }

  /** Every child of one parent, in no particular order. */
  async childrenOf(enterpriseId: string, parentId: string): Promise<DepartmentRow[]> {
    return this.db.selectFrom("department").select(columns)
      .where("enterprise_id", "=", enterpriseId).where("parent_department_id", "=", parentId).execute();
  }

  /**
   * The members of a department's subtree by today's directory, each with its group: the direct
   * child of `departmentId` whose subtree holds it (`group_id` that child), or `departmentId` itself
   * for a member placed directly in it. A member in two sibling subtrees has a row for each; one in
   * two departments of one subtree has one row for it. In (member_key, group_id) order.
   */
  async subtreeMembers(enterpriseId: string, departmentId: string): Promise<SubtreeMemberRow[]> {
    const { rows } = await sql<SubtreeMemberRow>`with recursive tree(group_id, department_id) as (
        select department_id, department_id from department where enterprise_id = ${enterpriseId} and parent_department_id = ${departmentId}
        union all
        -- tree first, so that SQLite seeks each row's children by (enterprise, parent): joined the other way it scanned every
        -- department of the enterprise for each row of the tree (CROSS JOIN keeps SQLite's order; PostgreSQL plans it as any join)
        select tree.group_id, d.department_id from tree cross join department d
        where d.enterprise_id = ${enterpriseId} and d.parent_department_id = tree.department_id
      )
      select tree.group_id, m.member_key from tree
        join member_department md on md.enterprise_id = ${enterpriseId} and md.department_id = tree.department_id
        join member m on m.enterprise_id = md.enterprise_id and m.user_id = md.user_id
      union
      select md.department_id as group_id, m.member_key from member_department md
        join member m on m.enterprise_id = md.enterprise_id and m.user_id = md.user_id
        where md.enterprise_id = ${enterpriseId} and md.department_id = ${departmentId}
      order by member_key, group_id`.execute(this.db);
    return rows.map((row) => ({ group_id: row.group_id, member_key: Number(row.member_key) }));
  }

  async listAll(enterpriseId: string): Promise<DepartmentRow[]> {
    return this.db.selectFrom("department").select(columns).where("enterprise_id", "=", enterpriseId).execute();
  }

  /** Deletes these departments (their members' placements in them go too, by the foreign key). */
  async deleteMany(enterpriseId: string, ids: readonly string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += 500) {
      await this.db.deleteFrom("department").where("enterprise_id", "=", enterpriseId).where("department_id", "in", ids.slice(i, i + 500)).execute();
    }
  }

  async upsertMany(enterpriseId: string, rows: readonly DepartmentRow[]): Promise<void> {
    for (let i = 0; i < rows.length; i += 500) {
      const chunk = rows.slice(i, i + 500).map((r) => ({ ...r, enterprise_id: enterpriseId, name_folded: foldName(r.name) }));
      await this.db.insertInto("department").values(chunk)
        .onConflict((oc) => oc.columns(["enterprise_id", "department_id"]).doUpdateSet((eb) => ({
          parent_department_id: eb.ref("excluded.parent_department_id"),
          name: eb.ref("excluded.name"),
          name_folded: eb.ref("excluded.name_folded"),
          full_path: eb.ref("excluded.full_path"),
          depth: eb.ref("excluded.depth"),
        })))
        .execute();
    }
  }
}

export interface SubtreeMemberRow {
  group_id: string;
  member_key: number;
}

/** LIKE wildcards in a keyword match themselves. */
function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}
