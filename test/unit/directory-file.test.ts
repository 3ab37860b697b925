import { describe, expect, it } from "vitest";
import { parseDirectoryFile } from "../../src/domain/directory-file.js";

const valid = {
  enterprise: { enterprise_id: "acme", name: "Acme", currency: "CNY" },
  departments: [{ department_id: "100", parent_department_id: "0", name: "Acme" }],
  members: [{ user_id: "1", email: "a@acme.example", account_type: 1, department_ids: ["100"] }],
};

describe("directory file", () => {
  it("reports the line and column of a JSON syntax error", () => {
    expect(() => parseDirectoryFile('{\n  "enterprise": {\n    "name": ,\n}')).toThrow(/^not valid JSON: line 3, column \d+/);
  });

  it("names the path of a bad field", () => {
    const bad = structuredClone(valid);
    (bad.members[0] as { account_type: number }).account_type = 3;
    expect(() => parseDirectoryFile(JSON.stringify(bad))).toThrow(/^members\[0\]\.account_type: must be 1 \(all-platform account\) or 2 \(Work-only account\)/);
    expect(() => parseDirectoryFile(JSON.stringify({ ...valid, extra: 1 }))).toThrow(/Unrecognized key/);
  });

  it("rejects a department or e-mail given twice", () => {
    const twice = { ...valid, members: [valid.members[0], { ...valid.members[0], user_id: "2", email: "A@acme.example" }] };
    expect(() => parseDirectoryFile(JSON.stringify(twice)))
      .toThrow('members[1].email: "A@acme.example" appears twice (first at members[0] as "a@acme.example", compared case-insensitively)');
  });
});
