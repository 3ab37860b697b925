// Two enterprises for tests: acme (the caller's, in most tests) and globex (the other tenant).
import type { DirectoryFile } from "../../src/domain/directory-file.js";

export const acme: DirectoryFile = {
  enterprise: { enterprise_id: "acme", name: "Acme Corp", currency: "CNY" },
  departments: [
    { department_id: "100", parent_department_id: "0", name: "Acme Corp" },
    { department_id: "110", parent_department_id: "100", name: "Engineering" },
    { department_id: "111", parent_department_id: "110", name: "Platform" },
    { department_id: "112", parent_department_id: "110", name: "Mobile_Apps" },
    { department_id: "120", parent_department_id: "100", name: "Sales" },
    { department_id: "121", parent_department_id: "120", name: "Sales Engineering" },
  ],
  members: [
    { user_id: "7001", email: "li.lei@acme.example", account_type: 1, department_ids: ["111"] },
    { user_id: "7002", email: "Han.Meimei@acme.example", account_type: 2, department_ids: ["121"] },
  ],
};

export const globex: DirectoryFile = {
  enterprise: { enterprise_id: "globex", name: "Globex", currency: "USD" },
  departments: [
    { department_id: "900", parent_department_id: "0", name: "Globex" },
    { department_id: "910", parent_department_id: "900", name: "Engineering" },
  ],
  members: [{ user_id: "8001", email: "homer@globex.example", account_type: 1, department_ids: ["910"] }],
};
