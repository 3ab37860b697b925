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
    ["2011-12-30", "2011-12-31", "Pacific/Apia"], // 2011-12-30 was skipped: the range starts with 2011-12-31
    ["2011-12-29", "2011-12-31", "Pacific/Apia"],
    ["9999-12-30", "9999-12-31", "UTC"], // ends at 10000-01-01, a date past YYYY-MM-DD
    ["2025-11-26", "2026-11-25", "Asia/Shanghai"],
    ["2026-11-25", "2026-11-25", "UTC"],
  ])("%s to %s in %s runs from the server's first instant of the first day to that of the day after the last", (from, to, zone) => {
    // A local day as the server reads it: from its first instant (local midnight, or the jump over it) to the next day's.
    const day = (date: string) => dateRangeWindow(date, date, zone, ["start_date", "end_date"]);
    expect(windowOf(range(from, to, zone))).toEqual({ start_time: day(from).start, end_time: day(to).end });
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
    expect(rangeProblem(range("2026-11-01", "2026-11-24", "+05:45"))).toBe('"+05:45" is not an IANA time zone (for example Asia/Shanghai or UTC).');
  });

  test("a range must start at 1970-01-01 00:00 UTC or later, where the report's start_time begins", () => {
    expect(rangeProblem(range("1969-12-31", "1970-01-05", "UTC"))).toBe("1969-12-31 in UTC starts before 1970-01-01 00:00 UTC, where the API's reports begin: choose a later start date.");
    expect(rangeProblem(range("1970-01-01", "1970-01-05", "Asia/Shanghai"))).toBe("1970-01-01 in Asia/Shanghai starts before 1970-01-01 00:00 UTC, where the API's reports begin: choose a later start date.");
    expect(rangeProblem(range("1970-01-01", "1970-01-05", "UTC"))).toBeUndefined();
    // Years 1 to 99 are dates like any other (Date.UTC would read them as 1901 to 1999).
    expect(rangeProblem(range("0099-12-31", "0100-01-05", "UTC"))).toBe("0099-12-31 in UTC starts before 1970-01-01 00:00 UTC, where the API's reports begin: choose a later start date.");
    expect(rangeProblem(range("0001-01-01", "0001-01-05", "Asia/Kolkata"))).toBe("0001-01-01 in Asia/Kolkata starts before 1970-01-01 00:00 UTC, where the API's reports begin: choose a later start date.");
  });

  test("a range of days the zone skipped is refused; one up to 9999-12-31 is not", () => {
    expect(rangeProblem(range("2011-12-30", "2011-12-30", "Pacific/Apia"))).toBe("Pacific/Apia skipped 2011-12-30 (its clocks jumped over it): choose other dates.");
    expect(rangeProblem(range("2011-12-30", "2011-12-31", "Pacific/Apia"))).toBeUndefined();
    expect(rangeProblem(range("9999-12-01", "9999-12-31", "Asia/Shanghai", "hour"))).toBeUndefined();
  });
});
