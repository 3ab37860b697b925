import { describe, expect, it } from "vitest";
import { placeDepartments } from "../../src/domain/department-tree.js";

const node = (department_id: string, parent_department_id: string, name: string) => ({ department_id, parent_department_id, name });

describe("department tree", () => {
  it("derives full_path from the root down and depth from the root's 0", () => {
    const placed = placeDepartments([node("3", "2", "Platform"), node("1", "0", "Acme"), node("2", "1", "Engineering")]);
    expect(placed.get("1")).toMatchObject({ full_path: "Acme", depth: 0 });
    expect(placed.get("3")).toMatchObject({ full_path: "Acme/Engineering/Platform", depth: 2 });
  });

  it("rejects a second root, a missing parent, a cycle and the reserved id 0", () => {
    expect(() => placeDepartments([node("1", "0", "A"), node("2", "0", "B")])).toThrow('exactly one department must have parent "0" (the root), found 2: 1, 2');
    expect(() => placeDepartments([node("1", "0", "A"), node("2", "9", "B")])).toThrow('department 2: parent_department_id "9" does not exist');
    expect(() => placeDepartments([node("1", "0", "A"), node("2", "3", "B"), node("3", "2", "C")])).toThrow(/cycle through (2 -> 3 -> 2|3 -> 2 -> 3)/);
    expect(() => placeDepartments([node("1", "0", "A"), node("0", "1", "B")])).toThrow('"0" is reserved');
  });
});
