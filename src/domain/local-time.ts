// Local time for the usage analytics: IANA time zone names, and the buckets of a window that start at
// local midnight (or on the local hour) in a zone. Luxon does the zone arithmetic (over the platform's
// Intl time zone data), so a daylight-saving day lasts 23 or 25 hours and +05:30 and +05:45 zones
// work. Times are Unix seconds.
import { DateTime, IANAZone } from "luxon";
import { invalidParameter } from "./errors.js";

export const DEFAULT_TIME_ZONE = "UTC";

/** A bucket of a window: [start, end) in Unix seconds; `date` (YYYY-MM-DD) for day buckets. */
export interface TimeBucket {
  start: number;
  end: number;
  date: string;
}

/** `name` as given when it is a time zone the platform knows (case-insensitively), else an error naming `field`. */
export function checkTimeZone(name: string, field: string): string {
  if (name === "" || !IANAZone.isValidZone(name)) {
    throw invalidParameter(`${field}: ${JSON.stringify(name)} is not an IANA time zone name (e.g. "UTC", "Asia/Kolkata")`);
  }
  return name;
}

/** Buckets from local midnight to local midnight in `zone`, the first and last cut at the window's edges. */
export function dayBuckets(start: number, end: number, zone: string): TimeBucket[] {
  return buckets(start, end, zone, "day");
}

/** Buckets from one local hour to the next in `zone` (its offset may be a half or quarter hour), cut likewise. */
export function hourBuckets(start: number, end: number, zone: string): TimeBucket[] {
  return buckets(start, end, zone, "hour");
}

/** The day buckets of `dayBuckets` one at a time, for a window of any length (the export's). */
export function eachDayBucket(start: number, end: number, zone: string): Generator<TimeBucket> {
  return eachBucket(start, end, zone, "day");
}

function buckets(start: number, end: number, zone: string, unit: "day" | "hour"): TimeBucket[] {
  return [...eachBucket(start, end, zone, unit)];
}

function* eachBucket(start: number, end: number, zone: string, unit: "day" | "hour"): Generator<TimeBucket> {
  let local: DateTime = DateTime.fromSeconds(start, { zone }).startOf(unit);
  while (local.toSeconds() < end) {
    const next = nextStart(local, unit);
    yield {
      start: Math.max(start, local.toSeconds()),
      end: Math.min(end, next.toSeconds()),
      date: unit === "day" ? local.toISODate()! : "",
    };
    local = next;
  }
}

/**
 * The start of the local day or hour after `local`. Luxon's plus() keeps the wall-clock minutes
 * across an offset change (Asia/Kathmandu going from +05:30 to +05:45 would make the next "midnight"
 * 00:15): startOf() brings it back to the boundary, unless that would not move forward.
 */
function nextStart(local: DateTime, unit: "day" | "hour"): DateTime {
  const next = local.plus({ [unit]: 1 });
  const boundary = next.startOf(unit);
  return boundary > local ? boundary : next;
}

/** The local day of `zone` holding the Unix second `ts`: [start, end) in Unix seconds. */
export function localDayAround(ts: number, zone: string): { start: number; end: number } {
  const local = DateTime.fromSeconds(ts, { zone }).startOf("day");
  return { start: local.toSeconds(), end: nextStart(local, "day").toSeconds() };
}

/** The UTC offset of `zone` at the Unix second `ts`, in minutes. */
export function utcOffsetMinutes(ts: number, zone: string): number {
  return DateTime.fromSeconds(ts, { zone }).offset;
}

/** The local date (YYYY-MM-DD) of a Unix second in `zone`. */
export function localDateOf(seconds: number, zone: string): string {
  return DateTime.fromSeconds(seconds, { zone }).toISODate()!;
}

/** The window [start, end) of local dates `from` to `to`, both inclusive (YYYY-MM-DD), in `zone`. */
export function dateRangeWindow(from: string, to: string, zone: string, fields: [from: string, to: string]): { start: number; end: number; days: number } {
  const first = localMidnight(from, zone, fields[0]);
  const last = localMidnight(to, zone, fields[1]);
  if (last < first) throw invalidParameter(`${fields[1]}: ${to} is before ${fields[0]} ${from}`);
  // The next day's first instant: from a day that began after a jump over midnight (01:00), adding a day
  // alone would end the window an hour into the next one.
  const next = last.plus({ days: 1 }).startOf("day");
  return { start: first.toSeconds(), end: next.toSeconds(), days: Math.round(next.diff(first, "days").days) };
}

/** Local midnight of a YYYY-MM-DD date in `zone`, or an error naming `field`. */
export function localMidnight(text: string, zone: string, field: string): DateTime {
  const date = /^\d{4}-\d{2}-\d{2}$/.test(text) ? DateTime.fromISO(text, { zone }) : undefined;
  if (!date?.isValid || date.year < 1970) throw invalidParameter(`${field}: ${JSON.stringify(text)} is not a date YYYY-MM-DD from 1970-01-01`);
  return date.startOf("day");
}
