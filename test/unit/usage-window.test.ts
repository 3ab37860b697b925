import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { DAY_SECONDS, periodOf, planWindow } from "../../src/domain/usage-window.js";

/** The signed count of cells covering each day the plan touches, and its raw ranges. */
function coverage(start: number, end: number) {
  const plan = planWindow(start, end);
  const days = new Map<number, number>();
  for (const cell of plan.cells) {
    const firstDay = cell.tierDays * cell.period - 3;
    expect(periodOf(cell.tierDays, firstDay)).toBe(cell.period);
    for (let d = firstDay; d < firstDay + cell.tierDays; d++) days.set(d, (days.get(d) ?? 0) + cell.sign);
  }
  return { plan, days };
}

describe("usage window plan", () => {
  it("counts every second of the window exactly once and nothing outside it, whatever the window", () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 2_000_000_000 }), fc.integer({ min: 1, max: 180 * DAY_SECONDS }), (start, span) => {
      const end = start + span;
      const { plan, days } = coverage(start, end);
      const firstDay = Math.ceil(start / DAY_SECONDS);
      const endDay = Math.floor(end / DAY_SECONDS);
      // Whole days inside the window count once; every other day nets to zero.
      for (const [day, count] of days) expect(count, `day ${day}`).toBe(day >= firstDay && day < endDay ? 1 : 0);
      for (let day = firstDay; day < endDay; day++) expect(days.get(day), `day ${day}`).toBe(1);
      // The raw ranges are exactly the partial days, each inside one UTC day.
      const raw = plan.rawRanges;
      for (const [from, to] of raw) {
        expect(from).toBeLessThan(to);
        expect(Math.floor(from / DAY_SECONDS)).toBe(Math.floor((to - 1) / DAY_SECONDS));
      }
      const rawSeconds = raw.reduce((sum, [from, to]) => sum + to - from, 0);
      const wholeSeconds = Math.max(0, endDay - firstDay) * DAY_SECONDS;
      expect(rawSeconds + wholeSeconds).toBe(span);
      for (const [from, to] of raw) {
        expect(from >= start && to <= end).toBe(true);
        expect(to <= firstDay * DAY_SECONDS || from >= Math.max(firstDay, endDay) * DAY_SECONDS).toBe(true);
      }
    }), { numRuns: 2000 });
  });

  it("reads a 180-day window from at most 11 cells a member, about 10.5 on average", () => {
    let total = 0;
    for (let i = 0; i < 365; i++) {
      const start = 1_735_689_600 + i * DAY_SECONDS + 12_345;
      const { plan } = coverage(start, start + 180 * DAY_SECONDS);
      expect(plan.cells.length).toBeLessThanOrEqual(11);
      expect(plan.rawRanges.length).toBe(2);
      total += plan.cells.length;
    }
    expect(total / 365).toBeLessThan(10.6);
  });

  it("reads a window inside one day from the raw events only", () => {
    expect(planWindow(100, 200)).toEqual({ cells: [], rawRanges: [[100, 200]] });
  });
});

describe("code point order", () => {
  it("orders as UTF-8 bytes do, surrogate pairs included, without allocating", async () => {
    const { compareCodePoints } = await import("../../src/domain/usage-event.js");
    const words = ["Zeta", "acme", "CUE", "Chat", "\u{1F600}x", "\uFFFDz", "é", "e", "", "a"];
    const byBytes = [...words].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    expect([...words].sort(compareCodePoints)).toEqual(byBytes);
    expect(compareCodePoints("\u{1F600}", "\uFFFD")).toBeGreaterThan(0); // U+1F600 > U+FFFD, though "\uD83D" < "\uFFFD"
  });
});
