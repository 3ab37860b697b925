import roaring from "roaring";
import { describe, expect, it } from "vitest";
import { FiguresPastBound, ReportCells, type MemberSumsOfDay, type PeriodFigures } from "../../src/domain/report-cells.js";
import { BASIC, EVENTS, ExactSums, INPUT, OUTPUT, PAY_GO } from "../../src/domain/usage-totals.js";
import { Grouping, type GroupDimension } from "../../src/domain/report-groups.js";

/** A small deterministic generator, so that a failure names a reproducible case. */
function generator(seed: number): () => number {
  let state = seed;
  return () => (state = (state * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
}

interface Case {
  days: MemberSumsOfDay[];
  groupsOf: Map<number, string[]>;
  dimensions: GroupDimension[];
  members: number[] | undefined;
  alone: boolean;
}

/** Days of member sums: members (keys 3, 6, 9, …) joining over the days, some in two department groups, some in none. */
function randomCase(random: () => number, wide: boolean): Case {
  const memberCount = 1 + Math.floor(random() * 200);
  const keys = Array.from({ length: memberCount }, (_, i) => 3 * (i + 1));
  const groupsOf = new Map<number, string[]>();
  for (const key of keys) if (random() < 0.9) groupsOf.set(key, random() < 0.2 ? [`a${key % 4}`, `b${key % 3}`] : [`a${key % 5}`]);
  const days = Array.from({ length: 1 + Math.floor(random() * 12) }, (_, d) => {
    const share = random() * Math.min(1, (d + 1) / 4);
    const dayKeys = Uint32Array.from(keys.filter(() => random() < share));
    const column = (limit: number) => Array.from(dayKeys, () => Math.floor(random() * limit));
    // Past 32 bits a column is 8 bytes wide (storage/member-day-sums.ts), and exact sums take bigints.
    const sums = wide
      ? [column(2 ** 40), column(2 ** 40), column(1e6), column(1e6)].map((values) => BigUint64Array.from(values, BigInt))
      : [column(4e6), column(4e6), column(1e6), column(1e6)].map((values) => Uint32Array.from(values));
    return { count: dayKeys.length, keys: dayKeys, columns: [...sums, Uint16Array.from(column(9), (n) => n + 1)] };
  });
  const dimensions: GroupDimension[] = random() < 0.5 ? ["department"] : random() < 0.5 ? ["member"] : ["department", "member"];
  const members = random() < 0.4 ? keys.filter(() => random() < 0.5) : undefined;
  return { days, groupsOf, dimensions, members, alone: random() < 0.5 };
}

/** Per day (one bucket each): group -> its five sums and its distinct members, by a plain walk over every member. */
function reference({ days, groupsOf, dimensions, members }: Case): Array<Map<string, string>> {
  return days.map((day) => {
    const groups = new Map<string, { sums: bigint[]; members: Set<number> }>();
    day.keys.forEach((key, m) => {
      if (members && !members.includes(key)) return;
      const departments = dimensions.includes("department") ? groupsOf.get(key) ?? [] : [""];
      for (const department of departments) {
        const name = `${dimensions.includes("member") ? key : -1},${department}`;
        const group = groups.get(name) ?? { sums: [0n, 0n, 0n, 0n, 0n], members: new Set() };
        day.columns.forEach((column, i) => (group.sums[i]! += BigInt(column[m]!)));
        group.members.add(key);
        groups.set(name, group);
      }
    });
    return new Map([...groups].map(([name, g]) => [name, `${g.sums.join(" ")} ${g.members.size}`]));
  });
}

function reported(cells: ReportCells, bucket: number): Map<string, string> {
  return new Map(cells.groups(bucket).map((g) => [
    `${g.key.memberKey},${g.key.departmentId}`,
    `${[INPUT, OUTPUT, BASIC, PAY_GO, EVENTS].map((i) => g.sums.exact(g.row, i)).join(" ")} ${g.activeMembers}`,
  ]));
}

describe("report cells: members' day sums", () => {
  it("each member's sums land once in each of its groups, exactly; members outside the report or without a group count nowhere", () => {
    const random = generator(7);
    for (let trial = 0; trial < 300; trial++) {
      const test = randomCase(random, trial % 5 === 0);
      const buckets = test.days.map((_, i) => ({ start: i, end: i + 1, date: "" }));
      // One grouping for two reports, as a department scope keeps it: the second finds the members the first met.
      const grouping = new Grouping(test.dimensions, test.groupsOf, test.members);
      const first = new ReportCells(buckets, grouping);
      test.days.slice(0, test.days.length >> 1).forEach((day, i) => first.addMemberSums(i, day, test.alone));
      const second = new ReportCells(buckets, grouping);
      test.days.forEach((day, i) => second.addMemberSums(i, day, test.alone));
      const expected = reference(test);
      test.days.forEach((_, i) => expect(reported(second, i), `trial ${trial}, day ${i}`).toEqual(expected[i]));
    }
  });

  it("sums a cell took from a period or a pair stay as they were when more is added to the cell", () => {
    const sumsOf = (...values: number[]) => {
      const sums = new ExactSums();
      values.forEach((value, i) => sums.add(0, i, value));
      return sums;
    };
    const members = (...keys: number[]) => new roaring.RoaringBitmap32(keys).serialize("portable");
    const period: PeriodFigures = { modelId: 0, sums: sumsOf(1, 2, 3, 4, 5), row: 0, memberCount: 1, members: members(7) };
    const pairSums = sumsOf(10, 20, 30, 40, 1);
    const cells = new ReportCells([{ start: 0, end: 1, date: "" }, { start: 1, end: 2, date: "" }], new Grouping([]));
    cells.addPeriod(0, period);
    cells.addPeriod(1, period);
    cells.addPairs(1, [{ memberKey: 7, modelId: 1, sums: pairSums, row: 0 }, { memberKey: 8, modelId: 1, sums: pairSums, row: 0 }]);
    cells.addPeriod(0, { ...period, sums: sumsOf(100, 0, 0, 0, 1), members: members(9) });
    const [first] = cells.groups(0);
    const [second] = cells.groups(1);
    expect([first!.sums.exact(first!.row, INPUT), first!.sums.exact(first!.row, EVENTS), first!.activeMembers]).toEqual([101, 6, 2]);
    expect([OUTPUT, INPUT, EVENTS].map((i) => second!.sums.exact(second!.row, i)).concat(second!.activeMembers)).toEqual([42, 21, 7, 2]);
    expect([0, 1, 2, 3, 4].map((i) => period.sums.exact(0, i))).toEqual([1, 2, 3, 4, 5]);
    expect([0, 1, 2, 3, 4].map((i) => pairSums.exact(0, i))).toEqual([10, 20, 30, 40, 1]);
  });

  it("cells past maxCells are refused as they are made, in any bucket and by any way in; a cell already made adds freely", () => {
    const sums = new ExactSums();
    sums.add(0, INPUT, 1);
    const buckets = [{ start: 0, end: 1, date: "" }, { start: 1, end: 2, date: "" }];
    const cells = new ReportCells(buckets, new Grouping(["model"]), 2);
    cells.addPeriod(0, { modelId: 1, sums, row: 0, memberCount: 1, members: new roaring.RoaringBitmap32([7]).serialize("portable") });
    cells.addPairs(1, [{ memberKey: 7, modelId: 1, sums, row: 0 }]);
    cells.addPairs(1, [{ memberKey: 8, modelId: 1, sums, row: 0 }]);
    expect(() => cells.addPairs(0, [{ memberKey: 7, modelId: 2, sums, row: 0 }])).toThrow(FiguresPastBound);
    expect(() => cells.addPeriod(1, { modelId: 3, sums, row: 0, memberCount: 1, members: new roaring.RoaringBitmap32([7]).serialize("portable") })).toThrow(FiguresPastBound);
  });
});
