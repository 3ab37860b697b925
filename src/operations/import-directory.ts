// Imports a directory file in one transaction: the enterprise, its whole department tree re-placed
// (so moves and renames update every descendant's full_path and depth), and its members.
import { placeDepartments, type DepartmentNode } from "../domain/department-tree.js";
import type { DirectoryFile } from "../domain/directory-file.js";
import { DEFAULT_TIME_ZONE } from "../domain/local-time.js";
import { invalidParameter } from "../domain/errors.js";
import { nowSeconds } from "../domain/credentials.js";
import type { Database } from "../storage/database.js";
import { DepartmentRepository } from "../storage/department-repository.js";
import { DirectoryRepository } from "../storage/directory-repository.js";

export interface ImportSummary {
  enterprise_id: string;
  departments: number;
  members: number;
}

export async function importDirectory(database: Database, file: DirectoryFile): Promise<ImportSummary> {
  const enterpriseId = file.enterprise.enterprise_id;
  return database.db.transaction().execute(async (trx) => {
    const departments = new DepartmentRepository(trx);
    const directory = new DirectoryRepository(trx);
    const existing = await directory.findEnterprise(enterpriseId);
    // A file without a time zone means UTC, as docs/file-formats.md says: the file is the enterprise's truth.
    await directory.upsertEnterprise({ ...file.enterprise, time_zone: file.enterprise.time_zone ?? DEFAULT_TIME_ZONE, created_at: existing?.created_at ?? nowSeconds() });

    const tree = new Map<string, DepartmentNode>();
    for (const row of await departments.listAll(enterpriseId)) tree.set(row.department_id, row);
    for (const dept of file.departments) tree.set(dept.department_id, dept);
    const placed = placeDepartments(tree.values());
    await departments.upsertMany(enterpriseId, [...placed.values()]);

    file.members.forEach((member, index) => {
      for (const departmentId of member.department_ids) {
        if (!placed.has(departmentId)) {
          throw invalidParameter(`members[${index}].department_ids: department "${departmentId}" does not exist`);
        }
      }
    });
    await directory.upsertMembers(enterpriseId, file.members);
    return { enterprise_id: enterpriseId, departments: file.departments.length, members: file.members.length };
  });
}
