// The range controls' rules: local dates in an IANA zone, at most 366 days (31 for hour buckets), the
// API's own limits (src/domain/report-limits.ts), so a range the API would refuse is never sent.
import { MAX_HOUR_REPORT_DAYS, MAX_REPORT_DAYS } from "../src/domain/report-limits.js";
import { addDays, daysInclusive, isDate, isTimeZone, midnight, midnightAfter } from "./dates.js";

export type Granularity = "day" | "hour";

export interface Range {
  from: string;
  to: string;
  timeZone: string;
  granularity: Granularity;
}

export { MAX_HOUR_REPORT_DAYS, MAX_REPORT_DAYS };

/** Why the API would refuse the range, in words for the user; undefined when it is within the limits. */
export function rangeProblem(range: Range): string | undefined {
  if (!isDate(range.from) || !isDate(range.to)) return "Choose both dates.";
  if (!isTimeZone(range.timeZone)) return `"${range.timeZone}" is not an IANA time zone (for example Asia/Shanghai or UTC).`;
  if (midnight(range.from, range.timeZone) < 0) {
    return `${range.from} in ${range.timeZone} starts before 1970-01-01 00:00 UTC, where the API's reports begin: choose a later start date.`;
  }
  const days = daysInclusive(range.from, range.to);
  if (days < 1) return "The start date is after the end date.";
  if (days > MAX_REPORT_DAYS) return `${days} days: at most ${MAX_REPORT_DAYS} days at a time.`;
  if (range.granularity === "hour" && days > MAX_HOUR_REPORT_DAYS) {
    return `${days} days: hourly buckets cover at most ${MAX_HOUR_REPORT_DAYS} days; choose days or a shorter range.`;
  }
  const { start_time, end_time } = windowOf(range);
  if (end_time === start_time) return `${range.timeZone} skipped ${range.from} (its clocks jumped over it): choose other dates.`;
  // The report counts seconds: a range of the most days that gains an hour at a daylight-saving change
  // (and loses none) is over its limit.
  const limit = range.granularity === "hour" ? MAX_HOUR_REPORT_DAYS : MAX_REPORT_DAYS;
  if (end_time - start_time > limit * 86_400) {
    return `${days} days are ${(end_time - start_time) / 3600} hours in ${range.timeZone}, over the limit of ${limit} × 24 hours: choose one day less.`;
  }
  return undefined;
}

/** [start_time, end_time) in Unix seconds: local midnight of `from` to local midnight after `to`. */
export function windowOf(range: Range): { start_time: number; end_time: number } {
  return { start_time: midnight(range.from, range.timeZone), end_time: midnightAfter(range.to, range.timeZone) };
}

/** The last `days` days up to today in the zone. */
export function lastDays(today: string, days: number, timeZone: string): Range {
  return { from: addDays(today, 1 - days), to: today, timeZone, granularity: "day" };
}
