// The rollups' periods and deltas (src/domain/usage-rollup.ts): which stored periods cover a bucket
// of any zone, and what an ingestion's events add to each grain.
import { describe, expect, it } from "vitest";
import {
  ALL_MODELS, DAY, HOUR, layoutFor, QUARTER, RollupDelta, RollupPeriods, type Grain,
} from "../../src/domain/usage-rollup.js";
import { ExactSums, SumLimitError } from "../../src/domain/usage-totals.js";
import { decodeMemberSums, mergeMemberSums } from "../../src/storage/member-day-sums.js";

const at = (iso: string) => Date.parse(iso) / 1000;
const periodsOf = (zone: string) => new RollupPeriods(layoutFor(zone, at("2025-06-01T00:00:00Z")));
const names = ["quarter", "hour", "day"];
const show = (cover: ReturnType<RollupPeriods["cover"]>) => ({
  periods: cover.periods.map((p) => `${names[p.grain]} ${new Date(p.start * 1000).toISOString().slice(5, 16)}`),
  raw: cover.raw.map((r) => `${new Date(r.from * 1000).toISOString().slice(11, 19)}-${new Date(r.to * 1000).toISOString().slice(11, 19)}`),
});

describe("RollupPeriods", () => {
  it("hours start on the zone's own hour: :00 for UTC and New York, :30 for Kolkata, :15 for Kathmandu", () => {
    expect(layoutFor("UTC", at("2025-06-01T00:00:00Z")).hourPhase).toBe(0);
    expect(layoutFor("America/New_York", at("2025-06-01T00:00:00Z")).hourPhase).toBe(0);
    expect(layoutFor("Asia/Kolkata", at("2025-06-01T00:00:00Z")).hourPhase).toBe(1800);
    expect(layoutFor("Asia/Kathmandu", at("2025-06-01T00:00:00Z")).hourPhase).toBe(900);
  });

  it("a day of the layout's zone is one stored day, 23 or 25 hours long across daylight saving", () => {
    const newYork = periodsOf("America/New_York");
    for (const [date, hours] of [["2025-03-09", 23], ["2025-11-02", 25], ["2025-06-15", 24]] as const) {
      const start = newYork.startOf(DAY, at(`${date}T12:00:00Z`));
      const end = newYork.endOf(DAY, start);
      expect(new Date(start * 1000).toISOString()).toBe(`${date}T0${date === "2025-03-09" ? 5 : 4}:00:00.000Z`);
      expect((end - start) / 3600).toBe(hours);
      expect(newYork.cover(start, end)).toStrictEqual({ periods: [{ grain: DAY, start }], raw: [] });
    }
  });

  it("a Kolkata day in a UTC layout is two quarters, 23 hours and two quarters", () => {
    const start = at("2025-06-01T18:30:00Z");
    const cover = periodsOf("UTC").cover(start, start + 86_400);
    expect(cover.raw).toStrictEqual([]);
    expect(cover.periods.map((p) => p.grain)).toStrictEqual([QUARTER, QUARTER, ...Array<Grain>(23).fill(HOUR), QUARTER, QUARTER]);
    expect(show(cover).periods.slice(0, 3)).toStrictEqual(["quarter 06-01T18:30", "quarter 06-01T18:45", "hour 06-01T19:00"]);
  });

  it("a Kathmandu (+05:45) day in its own layout is one day; its hours are the layout's hours", () => {
    const kathmandu = periodsOf("Asia/Kathmandu");
    const start = at("2025-06-01T18:15:00Z");
    expect(kathmandu.cover(start, start + 86_400).periods).toStrictEqual([{ grain: DAY, start }]);
    expect(kathmandu.cover(start + 3600, start + 3 * 3600).periods).toStrictEqual([{ grain: HOUR, start: start + 3600 }, { grain: HOUR, start: start + 7200 }]);
    // Days alone (a report's member day sums): the rest of the window is raw, whatever its length.
    expect(kathmandu.cover(start - 900, start + 86_400 + 3600, [DAY])).toStrictEqual({
      periods: [{ grain: DAY, start }], raw: [{ from: start - 900, to: start }, { from: start + 86_400, to: start + 86_400 + 3600 }],
    });
  });

  it("only the seconds off a quarter hour at a window's edges are raw", () => {
    const cover = periodsOf("UTC").cover(at("2025-06-01T10:07:00Z"), at("2025-06-02T00:20:05Z"));
    expect(show(cover)).toStrictEqual({
      periods: [
        "quarter 06-01T10:15", "quarter 06-01T10:30", "quarter 06-01T10:45",
        ...Array.from({ length: 13 }, (_, i) => `hour 06-01T${String(11 + i).padStart(2, "0")}:00`),
        "quarter 06-02T00:00",
      ],
      raw: ["10:07:00-10:15:00", "00:15:00-00:20:05"],
    });
  });
});

describe("RollupDelta", () => {
  it("sums each day per model and for all models, and each quarter and hour for all models only, exactly past 2^53, with every member and each member's day sums per model and for all models", () => {
    const delta = new RollupDelta(periodsOf("Asia/Kolkata"));
    const big = 10n ** 12n;
    const t = at("2025-06-01T18:20:00Z"); // 23:50 in Kolkata: the next quarter is the next local day
    for (let i = 0; i < 10_000; i++) delta.add(1 + (i % 3), 7, t, big, 1, big, 0);
    delta.add(9, 8, t + 600, 5, 6, 7, 8); // 00:00 in Kolkata
    const { grains, memberDays, sums } = delta.take();
    const entry = (grain: Grain, start: number, model: number) => {
      const e = grains.get(grain)!.get(start)?.get(model);
      return e && { sums: [0, 1, 2, 3, 4].map((i) => sums.total(e.row, i)), members: [...new Set(e.members)].sort() };
    };
    const manyBig = 10_000n * big; // past 2^53
    expect(entry(QUARTER, at("2025-06-01T18:15:00Z"), ALL_MODELS)).toStrictEqual({ sums: [manyBig, 10_000n, manyBig, 0n, 10_000n], members: [1, 2, 3] });
    expect(entry(QUARTER, at("2025-06-01T18:15:00Z"), 7)).toBeUndefined(); // no per-model quarters
    expect(entry(HOUR, at("2025-06-01T17:30:00Z"), ALL_MODELS)).toStrictEqual(entry(QUARTER, at("2025-06-01T18:15:00Z"), ALL_MODELS));
    expect(entry(HOUR, at("2025-06-01T17:30:00Z"), 7)).toBeUndefined(); // no per-model hours
    expect(entry(HOUR, at("2025-06-01T18:30:00Z"), ALL_MODELS)).toStrictEqual({ sums: [5n, 6n, 7n, 8n, 1n], members: [9] });
    expect(entry(DAY, at("2025-05-31T18:30:00Z"), 7)).toStrictEqual(entry(QUARTER, at("2025-06-01T18:15:00Z"), ALL_MODELS));
    expect(entry(DAY, at("2025-06-01T18:30:00Z"), 8)).toStrictEqual({ sums: [5n, 6n, 7n, 8n, 1n], members: [9] });
    expect(entry(DAY, at("2025-06-01T18:30:00Z"), 7)).toBeUndefined();
    const memberDay = (day: string, model: number, member: number) => {
      const row = memberDays.get(at(day))?.get(model)?.get(member);
      return row === undefined ? undefined : [0, 1, 2, 3, 4].map((i) => sums.total(row, i));
    };
    for (const model of [7, ALL_MODELS]) {
      expect(memberDay("2025-05-31T18:30:00Z", model, 1)).toStrictEqual([3334n * big, 3334n, 3334n * big, 0n, 3334n]);
      expect(memberDay("2025-06-01T18:30:00Z", model, 9)).toStrictEqual(model === 7 ? undefined : [5n, 6n, 7n, 8n, 1n]);
    }
    expect(memberDay("2025-06-01T18:30:00Z", 8, 9)).toStrictEqual([5n, 6n, 7n, 8n, 1n]);
    expect([...memberDays.keys()]).toHaveLength(2);
    expect([...memberDays.get(at("2025-05-31T18:30:00Z"))!.keys()].sort()).toStrictEqual([ALL_MODELS, 7]);
    expect(delta.size).toBe(0);
    expect(delta.take().grains.get(QUARTER)!.size).toBe(0);
  });
});

describe("member day sums", () => {
  /** Members' sums as a delta holds them: member key -> its row of `table`. */
  const sumsOf = (entries: ReadonlyArray<readonly [number, readonly number[]]>) => {
    const table = new ExactSums();
    const rows = new Map(entries.map(([key, values]) => {
      const row = table.newRow();
      values.forEach((v, i) => table.add(row, i, v));
      return [key, row] as const;
    }));
    return { rows, table };
  };
  const read = (packed: Uint8Array) => {
    const day = decodeMemberSums(packed);
    return Array.from({ length: day.count }, (_, m) => `${day.keys[m]}: ${day.columns.map((column) => column[m]).join(" ")}`);
  };

  it("round-trip every member's five sums in key order, each column as narrow as its largest value, exactly up to 2^64 - 1", () => {
    const { rows, table } = sumsOf([[900, [1, 2, 3, 4, 5]], [7, [0, 0, 0, 0, 1]], [2 ** 31 + 5, [2 ** 53 - 1, 10 ** 12, 0, 1, 2]]]);
    table.addBig(rows.get(900)!, 0, 2n ** 64n - 2n); // past 2^53: stays exact as a bigint
    const packed = mergeMemberSums(null, rows, table);
    expect(read(packed)).toStrictEqual(["7: 0 0 0 0 1", `900: ${2n ** 64n - 1n} 2 3 4 5`, `${2 ** 31 + 5}: ${2 ** 53 - 1} ${10 ** 12} 0 1 2`]);
    expect(decodeMemberSums(packed).columns.map((column) => column.BYTES_PER_ELEMENT)).toStrictEqual([8, 8, 1, 1, 1]);
    const odd = new Uint8Array(packed.length + 1);
    odd.set(packed, 1);
    expect(read(odd.subarray(1))).toStrictEqual(read(packed)); // bytes at an odd offset: copied, then read
    expect(() => decodeMemberSums(packed.subarray(0, packed.length - 1))).toThrow(/bytes where 3 members take/);
    table.add(rows.get(900)!, 0, 1); // 2^64: past a running total's limit
    expect(() => mergeMemberSums(null, rows, table)).toThrow(SumLimitError);
  });

  it("merge stored sums with added ones: members of either, sums added, untouched ones as stored", () => {
    const first = sumsOf([[3, [1, 1, 1, 1, 1]], [200, [5, 0, 0, 0, 1]], [70_000, [2 ** 53 - 1, 0, 0, 0, 1]]]);
    const stored = mergeMemberSums(null, first.rows, first.table);
    const added = sumsOf([[1, [9, 9, 9, 9, 9]], [200, [1, 2, 3, 4, 5]], [70_000, [2, 0, 0, 0, 1]], [80_000, [0, 0, 0, 0, 1]]]);
    const merged = mergeMemberSums(stored, added.rows, added.table);
    expect(read(merged)).toStrictEqual([
      "1: 9 9 9 9 9", "3: 1 1 1 1 1", "200: 6 2 3 4 6", `70000: ${2n ** 53n + 1n} 0 0 0 2`, "80000: 0 0 0 0 1",
    ]);
    expect(read(mergeMemberSums(merged, new Map(), new ExactSums()))).toStrictEqual(read(merged));
  });
});
