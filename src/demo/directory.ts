// The demo enterprise that `seed --demo` imports: a small department tree and a handful of members.
import type { DirectoryFile } from "../domain/directory-file.js";

export const DEMO_ENTERPRISE_ID = "demo";

export const demoDirectory: DirectoryFile = {
  enterprise: { enterprise_id: DEMO_ENTERPRISE_ID, name: "Demo Corp", currency: "CNY", time_zone: "Asia/Shanghai" },
  departments: [
    { department_id: "100", parent_department_id: "0", name: "Demo Corp" },
    { department_id: "110", parent_department_id: "100", name: "Engineering" },
    { department_id: "111", parent_department_id: "110", name: "Platform" },
    { department_id: "112", parent_department_id: "110", name: "Applications" },
    { department_id: "113", parent_department_id: "110", name: "Developer Experience" },
    { department_id: "120", parent_department_id: "100", name: "Sales" },
    { department_id: "121", parent_department_id: "120", name: "Sales East" },
    { department_id: "122", parent_department_id: "120", name: "Sales West" },
    { department_id: "130", parent_department_id: "100", name: "Finance" },
    { department_id: "140", parent_department_id: "100", name: "Research" },
    { department_id: "141", parent_department_id: "140", name: "Applied Research" },
  ],
  members: [
    { user_id: "7001", email: "li.lei@demo.example", account_type: 1, department_ids: ["111"] },
    { user_id: "7002", email: "han.meimei@demo.example", account_type: 1, department_ids: ["112"] },
    { user_id: "7003", email: "wang.fang@demo.example", account_type: 2, department_ids: ["113"] },
    { user_id: "7004", email: "zhang.wei@demo.example", account_type: 1, department_ids: ["121"] },
    { user_id: "7005", email: "chen.jing@demo.example", account_type: 2, department_ids: ["122"] },
    { user_id: "7006", email: "liu.yang@demo.example", account_type: 1, department_ids: ["130"] },
    { user_id: "7007", email: "zhao.min@demo.example", account_type: 1, department_ids: ["141", "111"] },
  ],
};
