import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { DAY_SECONDS } from "../../src/domain/local-time.js";
import { planWindow } from "../../src/domain/usage-window.js";

/**
 * How many times the plan counts each second around the window, as signed pieces: running totals
 * through day D count every second before the next midnight once (added or subtracted), a raw
 * range its own seconds. Returns the count at every point where it can change.
 */
function coverage(start: number, end: number) {
  const plan = planWindow(start, end);
  const pieces: Array<[from: number, to: number, sign: number]> = plan.raw.map(({ from, to, sign }) => [from, to, sign]);
  const origin = Math.min(start, ...plan.raw.map((r) => r.from)) - 10 * DAY_SECONDS;
  if (plan.runningTotals) {
    pieces.push([origin, (plan.runningTotals.plusThrough + 1) * DAY_SECONDS, 1]);
    pieces.push([origin, (plan.runningTotals.minusThrough + 1) * DAY_SECONDS, -1]);
  }
  const points = [...new Set([start, end, ...pieces.flatMap(([from, to]) => [from, to])])].sort((a, b) => a - b);
  const counts = points.map((at) => [at, pieces.reduce((n, [from, to, sign]) => n + (at >= from && at < to ? sign : 0), 0)] as const);
  return { plan, counts };
}

describe("usage window plan", () => {
  it("counts every second of the window exactly once and nothing outside it, whatever the window", () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 2_000_000_000 }), fc.integer({ min: 1, max: 180 * DAY_SECONDS }), (start, span) => {
      const end = start + span;
      const { plan, counts } = coverage(start, end);
      // Counts are constant between consecutive points, so checking each point checks every second.
      for (const [at, count] of counts) expect(count, `second ${at}`).toBe(at >= start && at < end ? 1 : 0);
      for (const { from, to } of plan.raw) {
        expect(from).toBeLessThan(to);
        expect(Math.floor(from / DAY_SECONDS), "a raw range lies inside one UTC day").toBe(Math.floor((to - 1) / DAY_SECONDS));
      }
    }), { numRuns: 5000 });
  });

  it("reads at most half a day of raw events at each end of a window of two days or more", () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 2_000_000_000 }), fc.integer({ min: 2 * DAY_SECONDS, max: 180 * DAY_SECONDS }), (start, span) => {
      const plan = planWindow(start, start + span);
      expect(plan.runningTotals).toBeDefined();
      expect(plan.raw.length).toBeLessThanOrEqual(2);
      for (const { from, to } of plan.raw) expect(to - from).toBeLessThanOrEqual(DAY_SECONDS / 2);
    }), { numRuns: 2000 });
  });

  it("reads whole days from running totals alone, and the nearer midnight's side of a partial day", () => {
    const day = 20_000;
    const midnight = day * DAY_SECONDS;
    expect(planWindow(midnight, midnight + 180 * DAY_SECONDS)).toEqual({ runningTotals: { plusThrough: day + 179, minusThrough: day - 1 }, raw: [] });
    // Starting an hour after midnight: the day from midnight, minus that hour. Ending an hour before
    // midnight: up to midnight, minus that hour.
    expect(planWindow(midnight + 3600, midnight + 30 * DAY_SECONDS - 3600)).toEqual({
      runningTotals: { plusThrough: day + 29, minusThrough: day - 1 },
      raw: [{ from: midnight, to: midnight + 3600, sign: -1 }, { from: midnight + 30 * DAY_SECONDS - 3600, to: midnight + 30 * DAY_SECONDS, sign: -1 }],
    });
    // Starting an hour before midnight and ending an hour after one: both hours added.
    expect(planWindow(midnight - 3600, midnight + 7 * DAY_SECONDS + 3600)).toEqual({
      runningTotals: { plusThrough: day + 6, minusThrough: day - 1 },
      raw: [{ from: midnight - 3600, to: midnight, sign: 1 }, { from: midnight + 7 * DAY_SECONDS, to: midnight + 7 * DAY_SECONDS + 3600, sign: 1 }],
    });
  });

  it("reads a short window from the raw events alone, split at midnight", () => {
    expect(planWindow(100, 200)).toEqual({ raw: [{ from: 100, to: 200, sign: 1 }] });
    expect(planWindow(DAY_SECONDS - 100, DAY_SECONDS + 100)).toEqual({
      raw: [{ from: DAY_SECONDS - 100, to: DAY_SECONDS, sign: 1 }, { from: DAY_SECONDS, to: DAY_SECONDS + 100, sign: 1 }],
    });
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
