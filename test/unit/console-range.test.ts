// The browser console's range rules (console/range.ts, console/dates.ts), run under Node's Intl: its
// windows are the server's own (dateRangeWindow, the engine of core-metrics and the report's days), and
// it refuses exactly the ranges the API would.
import { describe, expect, test } from "vitest";
import { rangeProblem, windowOf, type Range } from "../../console/range.js";
import { dateRangeWindow } from "../../src/domain/local-time.js";

const range = (from: string, to: string, timeZone: string, granularity: Range["granularity"] = "day"): Range => ({ from, to, timeZone, granularity });

describe("console range windows", () => {
  test.each([
    ["2026-03-01", "2026-03-31", "America/New_York"], // spring forward inside
    ["2026-10-20", "2026-11-05", "Europe/Berlin"], // fall back inside
    ["2026-01-01", "2026-12-31", "Asia/Kolkata"], // +05:30
    ["2026-04-01", "2026-04-10", "Asia/Kathmandu"], // +05:45
    ["2026-04-01", "2026-04-10", "Australia/Lord_Howe"], // a 30-minute daylight saving shift
    ["2026-09-05", "2026-09-07", "America/Santiago"], // 2026-09-06 has no midnight (00:00 -> 01:00)
    ["2026-09-06", "2026-09-06", "America/Santiago"],
    ["2026-03-08", "2026-03-08", "America/Havana"], // clocks jump at midnight too
    ["2025-11-26", "2026-11-25", "Asia/Shanghai"],
    ["2026-11-25", "2026-11-25", "UTC"],
  ])("%s to %s in %s runs from the server's first instant of the first day to that of the day after the last", (from, to, zone) => {
    // The first instant of a local day as the server reads it (local midnight, or the jump over it).
    const dayStart = (date: string) => dateRangeWindow(date, date, zone, ["start_date", "end_date"]).start;
    const after = new Date(Date.parse(`${to}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
    expect(windowOf(range(from, to, zone))).toEqual({ start_time: dayStart(from), end_time: dayStart(after) });
  });
});

describe("console range limits", () => {
  test("366 days (both dates counted) pass, 367 are refused naming the limit", () => {
    expect(rangeProblem(range("2025-11-24", "2026-11-25", "UTC"))).toBe("367 days: at most 366 days at a time.");
    expect(rangeProblem(range("2025-11-25", "2026-11-25", "UTC"))).toBeUndefined();
    expect(rangeProblem(range("2023-11-25", "2024-11-24", "UTC"))).toBeUndefined(); // 366 days over a 29 February
  });

  test("366 days that gain an hour at a daylight-saving change are over the report's 366 × 24 hours", () => {
    // Europe/Berlin falls back on 2029-10-28 and springs forward only on 2030-03-31.
    expect(rangeProblem(range("2029-03-26", "2030-03-26", "Europe/Berlin"))).toBe("366 days are 8785 hours in Europe/Berlin, over the limit of 366 × 24 hours: choose one day less.");
    expect(rangeProblem(range("2029-03-27", "2030-03-26", "Europe/Berlin"))).toBeUndefined();
  });

  test("hour buckets cover at most 31 days", () => {
    expect(rangeProblem(range("2026-11-01", "2026-12-01", "UTC", "hour"))).toBeUndefined();
    expect(rangeProblem(range("2026-10-31", "2026-12-01", "UTC", "hour"))).toBe("32 days: hourly buckets cover at most 31 days; choose days or a shorter range.");
  });

  test("an end before the start, a missing date and an unknown zone are refused", () => {
    expect(rangeProblem(range("2026-11-25", "2026-11-24", "UTC"))).toBe("The start date is after the end date.");
    expect(rangeProblem(range("", "2026-11-24", "UTC"))).toBe("Choose both dates.");
    expect(rangeProblem(range("2026-02-30", "2026-03-01", "UTC"))).toBe("Choose both dates.");
    expect(rangeProblem(range("2026-11-01", "2026-11-24", "Mars/Olympus"))).toBe('"Mars/Olympus" is not an IANA time zone (for example Asia/Shanghai or UTC).');
  });
});
