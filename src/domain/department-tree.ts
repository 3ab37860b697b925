// The department tree's rules: exactly one root (parent "0"), every parent known, no cycle; and the
// derived fields full_path (level names from the root, joined by "/") and depth (root = 0).
import { invalidParameter } from "./errors.js";

export const ROOT_PARENT_ID = "0";

export interface DepartmentNode {
  department_id: string;
  parent_department_id: string;
  name: string;
}

export interface PlacedDepartment extends DepartmentNode {
  full_path: string;
  depth: number;
}

/**
 * Places every department of one enterprise in its tree. Takes the whole tree (stored and imported
 * merged), so a rename or a move recomputes the paths of every descendant.
 */
export function placeDepartments(nodes: Iterable<DepartmentNode>): Map<string, PlacedDepartment> {
  const byId = new Map<string, DepartmentNode>();
  for (const node of nodes) byId.set(node.department_id, node);

  const roots = [...byId.values()].filter((n) => n.parent_department_id === ROOT_PARENT_ID);
  if (byId.size > 0 && roots.length !== 1) {
    throw invalidParameter(`departments: exactly one department must have parent "0" (the root), found ${roots.length}` +
      (roots.length > 1 ? `: ${roots.map((r) => r.department_id).join(", ")}` : ""));
  }
  if (byId.has(ROOT_PARENT_ID)) throw invalidParameter(`departments: "0" is reserved for the root and cannot be a department_id`);

  const placed = new Map<string, PlacedDepartment>();
  const place = (id: string, trail: string[]): PlacedDepartment => {
    const done = placed.get(id);
    if (done) return done;
    const node = byId.get(id)!;
    if (node.parent_department_id === ROOT_PARENT_ID) {
      const root = { ...node, full_path: node.name, depth: 0 };
      placed.set(id, root);
      return root;
    }
    if (trail.includes(id)) {
      throw invalidParameter(`departments: cycle through ${[...trail.slice(trail.indexOf(id)), id].join(" -> ")}`);
    }
    const parent = byId.get(node.parent_department_id);
    if (!parent) {
      throw invalidParameter(`department ${id}: parent_department_id "${node.parent_department_id}" does not exist`);
    }
    const parentPlaced = place(parent.department_id, [...trail, id]);
    const result = { ...node, full_path: `${parentPlaced.full_path}/${node.name}`, depth: parentPlaced.depth + 1 };
    placed.set(id, result);
    return result;
  };
  for (const id of byId.keys()) place(id, []);
  return placed;
}
