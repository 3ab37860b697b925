import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { DAY_SECONDS, periodOf, planWindow } from "../../src/domain/usage-window.js";

/** Which seconds a plan reads: every second in [start, end) exactly once. */
function coverage(start: number, end: number) {
  const plan = planWindow(start, end);
  const pieces: Array<[number, number]> = [...plan.rawRanges];
  for (const r of plan.rollups) {
    for (let p = r.fromPeriod; p < r.toPeriod; p++) {
      const firstDay = r.tierDays * p - 3;
      expect(periodOf(r.tierDays, firstDay)).toBe(p);
      pieces.push([firstDay * DAY_SECONDS, (firstDay + r.tierDays) * DAY_SECONDS]);
    }
  }
  return { plan, pieces: pieces.sort((a, b) => a[0] - b[0]) };
}

describe("usage window plan", () => {
  it("covers every second of the window exactly once, whatever the window", () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 2_000_000_000 }), fc.integer({ min: 1, max: 180 * DAY_SECONDS }), (start, span) => {
      const { pieces } = coverage(start, start + span);
      expect(pieces[0]![0]).toBe(start);
      expect(pieces[pieces.length - 1]![1]).toBe(start + span);
      for (let i = 1; i < pieces.length; i++) expect(pieces[i]![0]).toBe(pieces[i - 1]![1]);
    }), { numRuns: 2000 });
  });

  it("reads a 180-day window from few rollup ranges and at most two raw ranges", () => {
    const { plan } = coverage(1_735_689_600 + 12_345, 1_735_689_600 + 12_345 + 180 * DAY_SECONDS);
    expect(plan.rawRanges.length).toBeLessThanOrEqual(2);
    expect(plan.rollups.length).toBeLessThanOrEqual(5);
    const rawSeconds = plan.rawRanges.reduce((sum, [from, to]) => sum + to - from, 0);
    expect(rawSeconds).toBeLessThan(14 * DAY_SECONDS);
  });

  it("reads a window inside one day from the raw events only", () => {
    expect(planWindow(100, 200)).toEqual({ rollups: [], rawRanges: [[100, 200]] });
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
