// Imports a directory file in one transaction: the enterprise, its whole department tree re-placed
// (so moves and renames update every descendant's full_path and depth), and its members. With
// `prune`, the file is the whole directory: departments absent from it are deleted and members absent
// from it become former members (their usage history stays). A former member named again by a later
// file is restored. With `dryRun`, all of it is worked out and checked, then rolled back.
import { placeDepartments, type DepartmentNode } from "../domain/department-tree.js";
import type { DirectoryFile } from "../domain/directory-file.js";
import { DEFAULT_TIME_ZONE } from "../domain/local-time.js";
import { foldEmail } from "../domain/email-match.js";
import { invalidParameter } from "../domain/errors.js";
import { nowSeconds } from "../domain/credentials.js";
import { compareCodePoints } from "../domain/usage-event.js";
import type { Database } from "../storage/database.js";
import { DepartmentRepository } from "../storage/department-repository.js";
import { DirectoryRepository } from "../storage/directory-repository.js";

export interface ImportOptions {
  /** Also remove the departments and members absent from the file. */
  prune?: boolean;
  /** Write nothing: the summary says what the import would do. */
  dryRun?: boolean;
}

export interface ImportSummary {
  enterprise_id: string;
  /** The file's departments and members. */
  departments: number;
  members: number;
  /** What --prune removed (or would remove), each list in code point order of its id. */
  removed_departments: { department_id: string; full_path: string }[];
  removed_members: { user_id: string; email: string }[];
  /** Former members the file names again: current members once more, with their earlier history. */
  restored_members: { user_id: string; email: string }[];
  dry_run: boolean;
}

/** Carries a dry run's summary out of the transaction it rolls back. */
class DryRunRollback extends Error {
  constructor(readonly summary: ImportSummary) {
    super("dry run: rolled back");
  }
}

export async function importDirectory(database: Database, file: DirectoryFile, options: ImportOptions = {}): Promise<ImportSummary> {
  const enterpriseId = file.enterprise.enterprise_id;
  const prune = options.prune ?? false;
  const dryRun = options.dryRun ?? false;
  try {
    return await database.writeTransaction(async (trx) => {
      const departments = new DepartmentRepository(trx);
      const directory = new DirectoryRepository(trx);
      const now = nowSeconds();
      const existing = await directory.findEnterprise(enterpriseId);
      // A file without a time zone means UTC, as docs/file-formats.md says: the file is the enterprise's truth.
      await directory.upsertEnterprise({ ...file.enterprise, time_zone: file.enterprise.time_zone ?? DEFAULT_TIME_ZONE, created_at: existing?.created_at ?? now });

      // Pruning places the file's tree alone: a parent must then be in the file.
      const stored = await departments.listAll(enterpriseId);
      const tree = new Map<string, DepartmentNode>();
      if (!prune) for (const row of stored) tree.set(row.department_id, row);
      for (const dept of file.departments) tree.set(dept.department_id, dept);
      const placed = placeDepartments(tree.values());
      const removedDepartments = stored.filter((d) => !placed.has(d.department_id))
        .sort((a, b) => compareCodePoints(a.department_id, b.department_id));
      await departments.deleteMany(enterpriseId, removedDepartments.map((d) => d.department_id));
      await departments.upsertMany(enterpriseId, [...placed.values()]);

      file.members.forEach((member, index) => {
        for (const departmentId of member.department_ids) {
          if (!placed.has(departmentId)) {
            throw invalidParameter(`members[${index}].department_ids: department "${departmentId}" does not exist`);
          }
        }
      });
      const named = new Map(file.members.map((m) => [m.user_id, m]));
      const members = (await directory.listMembers(enterpriseId)).sort((a, b) => compareCodePoints(a.user_id, b.user_id));
      // Current members the file does not name: removed with --prune, else kept as they are.
      const unnamed = members.filter((m) => m.removed_at === null && !named.has(m.user_id));
      const removedMembers = prune ? unnamed : [];
      const restoredMembers = members.filter((m) => m.removed_at !== null && named.has(m.user_id));
      // Removed first, so that a member of the file may take over a removed member's e-mail; so are the
      // file's members whose e-mail changes (the upsert makes them current again at once), so that two
      // members may swap e-mails.
      const changingEmail = members.filter((m) => m.removed_at === null && named.has(m.user_id)
        && foldEmail(named.get(m.user_id)!.email) !== m.email_folded);
      await directory.removeMembers(enterpriseId, [...removedMembers, ...changingEmail].map((m) => m.user_id), now);
      const kept = prune ? [] : unnamed;
      refuseTakenEmails(file, new Map(kept.map((m) => [m.email_folded, m.user_id])));
      await directory.upsertMembers(enterpriseId, file.members);

      const summary: ImportSummary = {
        enterprise_id: enterpriseId,
        departments: file.departments.length,
        members: file.members.length,
        removed_departments: removedDepartments.map((d) => ({ department_id: d.department_id, full_path: d.full_path })),
        removed_members: removedMembers.map((m) => ({ user_id: m.user_id, email: m.email })),
        restored_members: restoredMembers.map((m) => ({ user_id: m.user_id, email: named.get(m.user_id)!.email })),
        dry_run: dryRun,
      };
      if (dryRun) throw new DryRunRollback(summary);
      return summary;
    });
  } catch (error) {
    if (error instanceof DryRunRollback) return error.summary;
    throw error;
  }
}

/**
 * A member of the file may not take the e-mail of a current member the file leaves in place (not
 * named, not pruned): e-mails match members, so one e-mail names one current member.
 */
function refuseTakenEmails(file: DirectoryFile, keptByEmail: ReadonlyMap<string, string>): void {
  file.members.forEach((member, index) => {
    const holder = keptByEmail.get(foldEmail(member.email));
    if (holder !== undefined) {
      throw invalidParameter(`members[${index}].email: ${JSON.stringify(member.email)} is the e-mail of member ${JSON.stringify(holder)}, ` +
        "which this file does not name (name that member with another e-mail, or import with --prune to make it a former member)");
    }
  });
}
