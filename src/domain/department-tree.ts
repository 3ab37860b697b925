// The department tree's rules: exactly one root (parent "0"), every parent known, no cycle; and the
// derived fields full_path (level names from the root, joined by "/") and depth (root = 0).
import { invalidParameter } from "./errors.js";

export const ROOT_PARENT_ID = "0";
/** Levels of a tree, the root's included: every full_path then stays within 100 names. */
export const MAX_DEPARTMENT_LEVELS = 100;

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
  for (const start of byId.keys()) {
    // Up from `start` to a department already placed (or the root), then placed on the way back down: a loop, not a recursion, so
    // that a deep chain cannot exhaust the stack before the depth rule names it.
    const chain: DepartmentNode[] = [];
    const onChain = new Set<string>();
    let above: PlacedDepartment | undefined;
    for (let id = start; !(above = placed.get(id));) {
      if (onChain.has(id)) {
        const ids = chain.map((n) => n.department_id);
        throw invalidParameter(`departments: cycle through ${cycleText([...ids.slice(ids.indexOf(id)), id])}`);
      }
      const node = byId.get(id)!;
      chain.push(node);
      onChain.add(id);
      if (node.parent_department_id === ROOT_PARENT_ID) break;
      if (!byId.has(node.parent_department_id)) {
        throw invalidParameter(`department ${id}: parent_department_id "${node.parent_department_id}" does not exist`);
      }
      id = node.parent_department_id;
    }
    for (const node of chain.reverse()) {
      const depth = above ? above.depth + 1 : 0;
      if (depth >= MAX_DEPARTMENT_LEVELS) {
        throw invalidParameter(`department ${node.department_id}: ${depth + 1} levels from the root down; a tree has at most ${MAX_DEPARTMENT_LEVELS}`);
      }
      const here: PlacedDepartment = { ...node, full_path: above ? `${above.full_path}/${node.name}` : node.name, depth };
      placed.set(node.department_id, here);
      above = here;
    }
  }
  return placed;
}

/** A cycle's ids joined by arrows; a long one by its first five and last three, with the count between, so the message stays one short line. */
function cycleText(ids: readonly string[]): string {
  if (ids.length <= 10) return ids.join(" -> ");
  return `${ids.slice(0, 5).join(" -> ")} -> … ${(ids.length - 8).toLocaleString("en-US")} more … -> ${ids.slice(-3).join(" -> ")}`;
}
