// A usage report's groups: which ones a member's usage of a model counts in (several for several subtrees), and their order.
import { invalidParameter } from "./errors.js";
import { compareCodePoints } from "./usage-event.js";
import { ALL_MODELS } from "./usage-rollup.js";

export type GroupDimension = "model" | "member" | "department";

const DIMENSIONS: readonly string[] = ["model", "member", "department"];

/** A group: its parts for the dimensions grouped by; the others are unset (-1, -1, ""). */
export interface GroupKey {
  /** 0, 1, 2, … in the order first met: the same for the same parts. */
  index: number;
  modelId: number;
  memberKey: number;
  departmentId: string;
}

/** Validation already allows each dimension once; this keeps the type honest. */
export function groupDimensions(groupBy: readonly string[]): GroupDimension[] {
  const wrong = groupBy.find((word, i) => !DIMENSIONS.includes(word) || groupBy.indexOf(word) !== i);
  if (wrong !== undefined) throw invalidParameter(`group_by: ${JSON.stringify(wrong)} is not one of "model", "member", "department" given once`);
  return [...groupBy] as GroupDimension[];
}

/**
 * The groups of each (member, model), worked out once per pair. `departmentGroupsOf`: each member's department groups (needed when grouping by
 * department); a member without one counts in no group, nor does one outside `members` when given.
 */
export class Grouping {
  private readonly known = new Map<number, Map<number, readonly GroupKey[]>>();
  /** department -> model -> key. */
  private readonly periodKeys = new Map<string, Map<number, GroupKey>>();
  private readonly indexes = new Map<string, number>();
  readonly byIndex: GroupKey[] = [];
  /** The members met so far with their groups for all models (a member day's sums are of all models). */
  readonly allModelGroups = new MemberGroups();
  private readonly byModel: boolean;
  /** Then each group is one member's: its active members are 1 wherever it has figures. */
  readonly byMember: boolean;
  private readonly byDepartment: boolean;
  private readonly members: ReadonlySet<number> | undefined;

  constructor(dimensions: readonly GroupDimension[],
    private readonly departmentGroupsOf?: ReadonlyMap<number, readonly string[]>, members?: readonly number[]) {
    this.members = members && new Set(members);
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
    if (this.members && !this.members.has(memberKey)) return [];
    const model = this.byModel ? modelId : -1;
    const member = this.byMember ? memberKey : -1;
    const departments = this.byDepartment ? this.departmentGroupsOf!.get(memberKey) ?? [] : [""];
    return departments.map((departmentId) => this.keyOf(model, member, departmentId));
  }

  /** `dayKeys` in ascending order. */
  learnAllModelGroups(dayKeys: Uint32Array): void {
    // makeKeys, not keysOf: the table is where these are kept (a grouping kept with a scope holds no map per member).
    const groupsOf = (memberKey: number) => this.makeKeys(memberKey, ALL_MODELS);
    if (this.allModelGroups.keys.length === 1 && this.byDepartment) {
      // The first time: every member with a department group at once, not a few more each day.
      this.allModelGroups.learn([...this.departmentGroupsOf!.keys()].sort((a, b) => a - b), groupsOf);
    }
    const table = this.allModelGroups.keys;
    const unknown: number[] = [];
    let at = 0;
    for (const key of dayKeys) {
      while (table[at]! < key) at++;
      if (table[at] !== key) unknown.push(key);
    }
    if (unknown.length > 0) this.allModelGroups.learn(unknown, groupsOf);
  }

  /** A period is all members': its model's and department's group, as far as they are grouped by. */
  periodKey(modelId: number, departmentId: string): GroupKey {
    const model = this.byModel ? modelId : -1;
    const department = this.byDepartment ? departmentId : "";
    let ofDepartment = this.periodKeys.get(department);
    if (!ofDepartment) this.periodKeys.set(department, (ofDepartment = new Map()));
    let key = ofDepartment.get(model);
    if (!key) ofDepartment.set(model, (key = this.keyOf(model, -1, department)));
    return key;
  }

  /** -1, -1, "" for a dimension not grouped by. */
  private keyOf(modelId: number, memberKey: number, departmentId: string): GroupKey {
    const id = `${modelId},${memberKey},${departmentId}`;
    let index = this.indexes.get(id);
    if (index === undefined) {
      this.indexes.set(id, (index = this.indexes.size));
      this.byIndex.push({ index, modelId, memberKey, departmentId });
    }
    return this.byIndex[index]!;
  }
}

/** By each dimension's rank, in the order of `dimensions`. */
export function compareGroups(dimensions: readonly GroupDimension[],
  ranks: { models: ReadonlyMap<number, number>; members: ReadonlyMap<number, number>; departments: ReadonlyMap<string, number> })
  : (a: GroupKey, b: GroupKey) => number {
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

export function ranksOf<T, K>(items: Iterable<T>, keyOf: (item: T) => K, compare: (a: T, b: T) => number): Map<K, number> {
  return new Map([...items].sort(compare).map((item, position) => [keyOf(item), position]));
}

/** The department itself (its directly placed members) first, then its children by name, then id, in code point order. */
export function departmentGroupRanks(selfId: string, children: readonly { department_id: string; name: string }[]): Map<string, number> {
  return new Map([[selfId, -1], ...ranksOf(children, (d) => d.department_id,
    (a, b) => compareCodePoints(a.name, b.name) || compareCodePoints(a.department_id, b.department_id))]);
}

/** Members in key order with their groups' indexes: a day's members (in key order too) find theirs by walking both lists, no lookup per member. */
export class MemberGroups {
  /** The members' keys in ascending order, then MEMBER_KEYS_END (above every key: a walk stops on it). */
  keys = Uint32Array.of(MEMBER_KEYS_END);
  /** The member at position p has groups[starts[p]] up to groups[starts[p + 1]] (excluded). */
  starts = new Int32Array(1);
  groups = new Int32Array(0);

  /** `added`: members not met before, in ascending order. */
  learn(added: readonly number[], groupsOf: (memberKey: number) => readonly GroupKey[]): void {
    const known = this.keys;
    const members = known.length - 1 + added.length;
    const keys = new Uint32Array(members + 1);
    const starts = new Int32Array(members + 1);
    const groups: number[] = [];
    let old = 0;
    let next = 0;
    for (let p = 0; p < members; p++) {
      starts[p] = groups.length;
      if (next === added.length || known[old]! < added[next]!) {
        keys[p] = known[old]!;
        for (let g = this.starts[old]!; g < this.starts[old + 1]!; g++) groups.push(this.groups[g]!);
        old++;
      } else {
        keys[p] = added[next++]!;
        for (const group of groupsOf(keys[p]!)) groups.push(group.index);
      }
    }
    keys[members] = MEMBER_KEYS_END;
    starts[members] = groups.length;
    this.keys = keys;
    this.starts = starts;
    this.groups = Int32Array.from(groups);
  }
}

/** Above every member key: a day's member sums hold keys of 32 bits, and no store has 2^32 - 1 members. */
const MEMBER_KEYS_END = 2 ** 32 - 1;
