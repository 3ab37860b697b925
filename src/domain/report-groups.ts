// The groups of a usage report: which groups a member's usage of a model counts in (one per
// combination of the group_by dimensions; several when the member sits in several department
// subtrees), and the order of the groups in a bucket (by the dimensions in the order given).
import { invalidParameter } from "./errors.js";
import { compareCodePoints } from "./usage-event.js";

export type GroupDimension = "model" | "member" | "department";

const DIMENSIONS: readonly string[] = ["model", "member", "department"];

/** A group: its parts for the dimensions grouped by; the others are unset (-1, -1, ""). */
export interface GroupKey {
  /** The group's number in its report (0, 1, 2, … in the order first met): the same for the same parts. */
  index: number;
  modelId: number;
  memberKey: number;
  departmentId: string;
}

/** The request's group_by as dimensions, each at most once (validation already says so; this keeps the type honest). */
export function groupDimensions(groupBy: readonly string[]): GroupDimension[] {
  const seen = new Set<string>();
  for (const word of groupBy) {
    if (!DIMENSIONS.includes(word) || seen.has(word)) {
      throw invalidParameter(`group_by: ${JSON.stringify(word)} is not one of "model", "member", "department" given once`);
    }
    seen.add(word);
  }
  return [...seen] as GroupDimension[];
}

/**
 * The groups of each (member, model), worked out once per pair. `departmentGroupsOf` gives a
 * member's department groups (only when grouping by department): a member without one counts in no
 * group.
 */
export class Grouping {
  private readonly known = new Map<number, Map<number, readonly GroupKey[]>>();
  /** periodKey's keys: department -> model -> key. */
  private readonly periodKeys = new Map<string, Map<number, GroupKey>>();
  private readonly indexes = new Map<string, number>();
  private readonly byModel: boolean;
  private readonly byMember: boolean;
  private readonly byDepartment: boolean;

  constructor(dimensions: readonly GroupDimension[],
    private readonly departmentGroupsOf?: ReadonlyMap<number, readonly string[]>) {
    this.byModel = dimensions.includes("model");
    this.byMember = dimensions.includes("member");
    this.byDepartment = dimensions.includes("department");
    if (this.byDepartment && !departmentGroupsOf) throw new Error("grouping by department needs the members' department groups");
  }

  keysOf(memberKey: number, modelId: number): readonly GroupKey[] {
    let ofMember = this.known.get(memberKey);
    if (!ofMember) this.known.set(memberKey, (ofMember = new Map()));
    let keys = ofMember.get(modelId);
    if (!keys) ofMember.set(modelId, (keys = this.makeKeys(memberKey, modelId)));
    return keys;
  }

  private makeKeys(memberKey: number, modelId: number): GroupKey[] {
    const model = this.byModel ? modelId : -1;
    const member = this.byMember ? memberKey : -1;
    const departments = this.byDepartment ? this.departmentGroupsOf!.get(memberKey) ?? [] : [""];
    return departments.map((departmentId) => this.keyOf(model, member, departmentId));
  }

  /** The group of a period's model and department, as far as they are grouped by (a period is all members'). */
  periodKey(modelId: number, departmentId: string): GroupKey {
    const model = this.byModel ? modelId : -1;
    const department = this.byDepartment ? departmentId : "";
    let ofDepartment = this.periodKeys.get(department);
    if (!ofDepartment) this.periodKeys.set(department, (ofDepartment = new Map()));
    let key = ofDepartment.get(model);
    if (!key) ofDepartment.set(model, (key = this.keyOf(model, -1, department)));
    return key;
  }

  /** The group of these parts (-1, -1, "" for a dimension not grouped by). */
  private keyOf(modelId: number, memberKey: number, departmentId: string): GroupKey {
    const id = `${modelId},${memberKey},${departmentId}`;
    let index = this.indexes.get(id);
    if (index === undefined) this.indexes.set(id, (index = this.indexes.size));
    return { index, modelId, memberKey, departmentId };
  }
}

/** Positions of each dimension's parts in their order (see the rank helpers below). */
export interface GroupRanks {
  models: ReadonlyMap<number, number>;
  members: ReadonlyMap<number, number>;
  departments: ReadonlyMap<string, number>;
}

/** Orders groups by their dimensions' parts, in the order of `dimensions`. */
export function compareGroups(dimensions: readonly GroupDimension[], ranks: GroupRanks): (a: GroupKey, b: GroupKey) => number {
  const rankers = dimensions.map((dimension) => {
    if (dimension === "model") return (key: GroupKey) => ranks.models.get(key.modelId) ?? 0;
    if (dimension === "member") return (key: GroupKey) => ranks.members.get(key.memberKey) ?? 0;
    return (key: GroupKey) => ranks.departments.get(key.departmentId) ?? 0;
  });
  return (a, b) => {
    for (const rank of rankers) {
      const order = rank(a) - rank(b);
      if (order !== 0) return order;
    }
    return 0;
  };
}

/** Positions of `items` sorted by `compare`, keyed by `keyOf`. */
export function ranksOf<T, K>(items: Iterable<T>, keyOf: (item: T) => K, compare: (a: T, b: T) => number): Map<K, number> {
  return new Map([...items].sort(compare).map((item, position) => [keyOf(item), position]));
}

/**
 * Department groups' order: the department itself first (its directly placed members), then its
 * children by name, then department_id, in code point order.
 */
export function departmentGroupRanks(selfId: string, children: readonly { department_id: string; name: string }[]): Map<string, number> {
  const ordered = [...children].sort((a, b) => compareCodePoints(a.name, b.name) || compareCodePoints(a.department_id, b.department_id));
  return new Map([selfId, ...ordered.map((child) => child.department_id)].map((id, position) => [id, position]));
}
