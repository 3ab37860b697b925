// DepartmentService: proto <-> repository for batch-get, children and keyword search. No SQL here.
import type { ServiceImpl } from "@connectrpc/connect";
import type { Department } from "../../gen/enterprise_admin/v1/department_pb.js";
import { DepartmentService } from "../../gen/enterprise_admin/v1/department_pb.js";
import { uniqueInOrder } from "../domain/batch.js";
import { ROOT_PARENT_ID } from "../domain/department-tree.js";
import { AppError, ErrorCode, invalidParameter } from "../domain/errors.js";
import { decodePageToken, effectivePageSize, encodePageToken } from "../domain/page-token.js";
import { foldName } from "../domain/text-rules.js";
import { principalOf } from "../interceptors/auth.js";
import type { DepartmentRepository, DepartmentRow } from "../storage/department-repository.js";

export const MAX_BATCH_DEPARTMENTS = 100;

export function departmentService(departments: DepartmentRepository): ServiceImpl<typeof DepartmentService> {
  return {
    async batchGetDepartments(request, context) {
      const { enterpriseId } = principalOf(context);
      const ids = uniqueInOrder(request.departmentIds);
      if (ids.length > MAX_BATCH_DEPARTMENTS) {
        throw invalidParameter(`department_ids after de-duplication: ${ids.length} > ${MAX_BATCH_DEPARTMENTS}`);
      }
      const wantsRoot = ids.includes(ROOT_PARENT_ID);
      const rows = await departments.findByIds(enterpriseId, ids.filter((id) => id !== ROOT_PARENT_ID), wantsRoot);
      const byId = new Map(rows.map((row) => [row.department_id, row]));
      const root = wantsRoot ? rows.find((row) => row.parent_department_id === ROOT_PARENT_ID) : undefined;

      const items: DepartmentRow[] = [];
      const returned = new Set<string>();
      const notFound: string[] = [];
      for (const id of ids) {
        const row = id === ROOT_PARENT_ID ? root : byId.get(id);
        if (!row) notFound.push(id);
        else if (!returned.has(row.department_id)) {
          returned.add(row.department_id);
          items.push(row);
        }
      }
      return { items: items.map(toDepartment), notFoundDepartmentIds: notFound };
    },

    async listChildDepartments(request, context) {
      const { enterpriseId } = principalOf(context);
      const parentId = request.departmentId;
      if (parentId !== ROOT_PARENT_ID && !(await departments.exists(enterpriseId, parentId))) {
        throw new AppError(ErrorCode.DEPARTMENT_NOT_FOUND, `department_id: department "${parentId}" not found`);
      }
      const query = `children:${parentId}`;
      const pageSize = effectivePageSize(request.pageSize);
      const rows = await departments.listChildren(enterpriseId, parentId, decodePageToken(query, request.pageToken), pageSize + 1);
      return page(rows, pageSize, query);
    },

    async searchDepartments(request, context) {
      const { enterpriseId } = principalOf(context);
      const keyword = foldName(request.keyword);
      const query = `search:${keyword}`;
      const pageSize = effectivePageSize(request.pageSize);
      const rows = await departments.searchByName(enterpriseId, keyword, decodePageToken(query, request.pageToken), pageSize + 1);
      return page(rows, pageSize, query);
    },
  };
}

/** Reads page_size + 1 rows: the extra one only says whether a next page exists. */
function page(rows: DepartmentRow[], pageSize: number, query: string) {
  const items = rows.slice(0, pageSize);
  const nextPageToken = rows.length > pageSize ? encodePageToken(query, items[items.length - 1]!.department_id) : "";
  return { items: items.map(toDepartment), nextPageToken };
}

function toDepartment(row: DepartmentRow): Omit<Department, "$typeName"> {
  return {
    departmentId: row.department_id,
    parentDepartmentId: row.parent_department_id,
    name: row.name,
    fullPath: row.full_path,
    depth: Number(row.depth),
  };
}
