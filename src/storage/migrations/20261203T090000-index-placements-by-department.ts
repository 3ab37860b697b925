// Members' placements by department: deleting a department (import directory --prune) deletes its
// placements by the foreign key, which without this index scanned every placement of the enterprise
// for each department deleted. Frozen text that imports nothing but Kysely.
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex("member_department_by_department").on("member_department").columns(["enterprise_id", "department_id"]).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex("member_department_by_department").execute();
}
