// DepartmentService in memory (router transport, real chain and database): batch get, children, search.
import { Code, type Client } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DepartmentService } from "../../gen/enterprise_admin/v1/department_pb.js";
import { ErrorCode } from "../../src/domain/errors.js";
import { dialects } from "../helpers/databases.js";
import { failureOf, startInMemoryService, type InMemoryService } from "../helpers/in-memory-service.js";

describe.each(dialects)("DepartmentService in memory (%s)", (dialect) => {
  let service: InMemoryService;
  let departments: Client<typeof DepartmentService>;

  beforeAll(async () => {
    service = await startInMemoryService(dialect);
    departments = service.client(DepartmentService, await service.token(["departments:read"]));
  });
  afterAll(() => service.close());

  it("batch get answers in order of first mention, \"0\" as the root, unknown and other tenants' ids as sent, once each", async () => {
    const answer = await departments.batchGetDepartments({ departmentIds: ["111", "0", "nope", "111", "910", "nope", "100"] });
    expect(answer.items.map((d) => [d.departmentId, d.fullPath, d.depth])).toEqual([
      ["111", "Acme Corp/Engineering/Platform", 2],
      ["100", "Acme Corp", 0],
    ]);
    expect(answer.notFoundDepartmentIds).toEqual(["nope", "910"]);
  });

  it("a batch of 101 ids after de-duplication is refused with 4001 naming the limit", async () => {
    const ids = Array.from({ length: 101 }, (_, i) => `d${i}`);
    expect(await failureOf(departments.batchGetDepartments({ departmentIds: [...ids, "d0"] }))).toEqual({
      code: Code.InvalidArgument, errorCode: ErrorCode.INVALID_PARAMETER, message: "department_ids after de-duplication: 101 > 100",
    });
  });

  it("children come in pages of page_size with a token for the next page; an unknown parent is 4042", async () => {
    const first = await departments.listChildDepartments({ departmentId: "100", pageSize: 1 });
    expect(first.items.map((d) => d.departmentId)).toEqual(["110"]);
    const second = await departments.listChildDepartments({ departmentId: "100", pageSize: 1, pageToken: first.nextPageToken });
    expect(second.items.map((d) => d.departmentId)).toEqual(["120"]);
    expect(second.nextPageToken).toBe("");
    expect(await failureOf(departments.listChildDepartments({ departmentId: "910" }))).toMatchObject({
      code: Code.NotFound, errorCode: ErrorCode.DEPARTMENT_NOT_FOUND,
    });
  });

  it("search matches a case-insensitive substring of the name within the caller's enterprise", async () => {
    const answer = await departments.searchDepartments({ keyword: "ENGINEERING" });
    expect(answer.items.map((d) => d.departmentId)).toEqual(["110", "121"]);
  });

  it("without a token the call is 1002; a token without departments:read is 30017", async () => {
    expect(await failureOf(service.client(DepartmentService).batchGetDepartments({ departmentIds: ["100"] }))).toEqual({
      code: Code.Unauthenticated, errorCode: ErrorCode.INVALID_ACCESS_TOKEN, message: "access token missing: send Authorization: Bearer <access_token>",
    });
    const reader = service.client(DepartmentService, await service.token(["statistics:read"]));
    expect(await failureOf(reader.batchGetDepartments({ departmentIds: ["100"] }))).toEqual({
      code: Code.PermissionDenied, errorCode: ErrorCode.PERMISSION_DENIED, message: "permission denied: this operation needs departments:read",
    });
  });

  it("the proto rules are checked before the handler: an empty id is 4001 naming the field", async () => {
    expect(await failureOf(departments.batchGetDepartments({ departmentIds: [""] }))).toMatchObject({
      code: Code.InvalidArgument, errorCode: ErrorCode.INVALID_PARAMETER, message: expect.stringMatching(/^department_ids\[0\]: /),
    });
  });
});
