// Local days and hours in Unix seconds: a window's offsets found once, arithmetic where none changes, luxon where one does.
import { DateTime, IANAZone } from "luxon";
import { invalidParameter } from "./errors.js";

export const DEFAULT_TIME_ZONE = "UTC";

/** [start, end) in Unix seconds; `date` (YYYY-MM-DD) for day buckets. */
export interface TimeBucket {
  start: number;
  end: number;
  date: string;
}

/** A zone the platform knows (case-insensitively; else an error naming `field`), or `fallback` (the enterprise's). */
export function zoneOrDefault(requested: string | undefined, fallback: string, field: string): string {
  if (requested === undefined || requested === "") return fallback;
  if (!IANAZone.isValidZone(requested)) throw invalidParameter(`${field}: ${JSON.stringify(requested)} is not an IANA time zone name (e.g. "UTC", "Asia/Kolkata")`);
  return requested;
}

/** The platform's one name for a zone, whatever case or alias it was given in: "asia/calcutta" and "Asia/Kolkata" are "Asia/Calcutta". */
export const zoneIdentity = (zone: string): string => new Intl.DateTimeFormat("en-US", { timeZone: zone }).resolvedOptions().timeZone;

/** Local days or hours (an offset may be a half or quarter hour), cut at the window's edges; one at a time, for any window (the export's). */
export function* eachBucket(start: number, end: number, zone: string, unit: "day" | "hour"): Generator<TimeBucket> {
  const offsets = new ZoneOffsets(zone, start - DAY_SECONDS, end + DAY_SECONDS);
  // Dates past 9999 are not YYYY-MM-DD (a window to 10000-01-01 UTC reaches them east of UTC): checked first, so an export fails before any row.
  if (unit === "day" && !/^\d{4}-\d\d-\d\d$/.test(offsets.dateOf(end - 1))) {
    throw invalidParameter(`end_time: ${end} falls on a local date past 9999-12-31 in ${zone}`);
  }
  let at = unit === "hour" ? offsets.hourStart(start) : dayStart(DateTime.fromSeconds(start, { zone })).toSeconds();
  while (at < end) {
    const next = offsets.nextStart(at, unit);
    // A day the window starts after, though its date is back (America/Moncton fell back from 00:01 to 23:01 of the day before).
    if (next > start) yield { start: Math.max(start, at), end: Math.min(end, next), date: unit === "day" ? offsets.dateOf(at) : "" };
    at = next;
  }
}

export const DAY_SECONDS = 86_400;
export const HOUR_SECONDS = 3_600;
const UNIT_SECONDS = { day: DAY_SECONDS, hour: HOUR_SECONDS } as const;

/** A zone's offsets over [from, to): probed once a day, each change bisected to the second; outside the window, luxon's. */
export class ZoneOffsets {
  /** Segment i is [starts[i], starts[i + 1]) (the last to `to`) with offset offsets[i]. */
  private readonly starts: number[] = [];
  private readonly offsets: number[] = [];

  private readonly offsetOf: (ts: number) => number;

  constructor(readonly zone: string, private readonly from: number, private readonly to: number) {
    const offsetOf = (this.offsetOf = offsetReader(zone));
    let offset = offsetOf(from);
    this.starts.push(from);
    this.offsets.push(offset);
    for (let at = from; at < to;) {
      let high = Math.min(to, at + DAY_SECONDS);
      if (offsetOf(high) !== offset) {
        // The change is in (at, high]: bisected to the first second with the new offset, `at` moving up to the last with the old one.
        while (high - at > 1) {
          const middle = Math.floor((at + high) / 2);
          if (offsetOf(middle) === offset) at = middle;
          else high = middle;
        }
        this.starts.push(high);
        this.offsets.push((offset = offsetOf(high)));
      }
      at = high;
    }
  }

  /** Seconds east of UTC. */
  offsetAt(ts: number): number {
    if (ts < this.from || ts >= this.to) return this.offsetOf(ts);
    return this.offsets[this.segmentOf(ts)]!;
  }

  private constantOver(a: number, b: number): boolean {
    return a >= this.from && b < this.to && this.segmentOf(a) === this.segmentOf(b);
  }

  private segmentOf(ts: number): number {
    let low = 0;
    let high = this.starts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >>> 1;
      if (this.starts[middle]! <= ts) low = middle;
      else high = middle - 1;
    }
    return low;
  }

  /**
   * A unit later when `start` is on the local boundary (a day begun after a jump over midnight is not) and the offset holds. An hour
   * ends at the next local hour under the offset at its start, or where the offset changes first: the clock jumps there, into another
   * hour (Chatham's fall from 03:45 +13:45 to 02:45 +12:45 is inside a UTC hour, and its hour boundaries are not).
   */
  nextStart(start: number, unit: "day" | "hour"): number {
    const next = start + UNIT_SECONDS[unit];
    if (this.constantOver(start, next) && mod(start + this.offsetAt(start), UNIT_SECONDS[unit]) === 0) return next;
    if (unit === "hour" && start >= this.from && start < this.to) {
      const segment = this.segmentOf(start);
      const onTheHour = start + HOUR_SECONDS - mod(start + this.offsets[segment]!, HOUR_SECONDS);
      const change = this.starts[segment + 1];
      return change !== undefined && change < onTheHour ? change : onTheHour;
    }
    return nextStart(DateTime.fromSeconds(start, { zone: this.zone }), unit).toSeconds();
  }

  /**
   * The start of the hour bucket holding `ts` (inside the offsets' span): its local hour under its offset, or the offset change after
   * that, as nextStart ends hours. Luxon's startOf("hour") of a time just after a jump is an hour in the jump: skipped (Chatham's
   * 03:00 on the day it goes from 02:45 to 03:45), and so moved past `ts`, or repeated, and so taken an hour early.
   */
  hourStart(ts: number): number {
    const segment = this.segmentOf(ts);
    return Math.max(ts - mod(ts + this.offsets[segment]!, HOUR_SECONDS), this.starts[segment]!);
  }

  dayAround(ts: number): { start: number; end: number } {
    const start = ts - mod(ts + this.offsetAt(ts), DAY_SECONDS);
    // From the second before it: a midnight the clock reaches again by falling back is not where its date began.
    if (this.constantOver(start - 1, start + DAY_SECONDS)) return { start, end: start + DAY_SECONDS };
    return localDayAround(ts, this.zone);
  }

  dateOf(ts: number): string {
    return new Date((ts + this.offsetAt(ts)) * 1000).toISOString().slice(0, 10);
  }
}

/** Never negative (times before an offset's origin). */
export const mod = (a: number, m: number) => ((a % m) + m) % m;

/**
 * The start of the local day or hour after `local`. Luxon's plus() keeps the wall-clock minutes across an offset change (Kathmandu's
 * +05:30 to +05:45 would make the next "midnight" 00:15): startOf() brings it back to the boundary, unless that would not move forward.
 */
function nextStart(local: DateTime, unit: "day" | "hour"): DateTime {
  const next = local.plus({ [unit]: 1 });
  const boundary = next.startOf(unit);
  return boundary > local ? boundary : next;
}

export function localDayAround(ts: number, zone: string): { start: number; end: number } {
  const local = dayStart(DateTime.fromSeconds(ts, { zone }));
  return { start: local.toSeconds(), end: nextStart(local, "day").toSeconds() };
}

/**
 * The first second of `local`'s date. Where the clock falls back to 00:00 (Atlantic/Azores and America/Havana today), that date has
 * two midnights, and luxon's startOf("day") after the second one is the second: the date began at the first.
 */
function dayStart(local: DateTime): DateTime {
  const start = local.startOf("day");
  const before = start.minus({ seconds: 1 });
  return before.toISODate() === start.toISODate() ? before.startOf("day") : start;
}

/** Seconds east of UTC at a Unix second, through one kept Intl formatter: making one is slow, and luxon's offset several times slower. */
export function offsetReader(zone: string): (ts: number) => number {
  const format = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "longOffset" });
  return (ts) => {
    const text = format.format(ts * 1000);
    // "…, GMT+05:45", "…, GMT-00:44:30" (Monrovia until 1972), "…, GMT" (some platforms, for UTC).
    const match = /GMT(?:([+\-\u2212])(\d\d):(\d\d)(?::(\d\d))?)?$/.exec(text);
    if (!match) throw new Error(`time zone ${zone}: unreadable offset in ${JSON.stringify(text)}`);
    const seconds = Number(match[2] ?? 0) * 3600 + Number(match[3] ?? 0) * 60 + Number(match[4] ?? 0);
    return match[1] === "+" || match[1] === undefined ? seconds : -seconds;
  };
}

export function localDateOf(seconds: number, zone: string): string {
  return DateTime.fromSeconds(seconds, { zone }).toISODate()!;
}

/** Local dates `from` to `to` (YYYY-MM-DD), both inclusive, as [start, end). */
export function dateRangeWindow(from: string, to: string, zone: string, fields: [from: string, to: string]): { start: number; end: number; days: number } {
  const first = localMidnight(from, zone, fields[0]);
  const last = localMidnight(to, zone, fields[1]);
  if (last < first) throw invalidParameter(`${fields[1]}: ${to} is before ${fields[0]} ${from}`);
  // From a day that began after a jump over midnight (01:00), adding a day alone would end the window an hour into the next one. A date
  // the zone skipped (Samoa's 2011-12-30) is the next day's midnight: the window ends there, without it.
  const next = last.toISODate() === to ? last.plus({ days: 1 }).startOf("day") : last;
  return { start: first.toSeconds(), end: next.toSeconds(), days: Math.round(next.diff(first, "days").days) };
}

export function localMidnight(text: string, zone: string, field: string): DateTime {
  const date = /^\d{4}-\d{2}-\d{2}$/.test(text) ? DateTime.fromISO(text, { zone }) : undefined;
  if (!date?.isValid || date.year < 1970) throw invalidParameter(`${field}: ${JSON.stringify(text)} is not a date YYYY-MM-DD from 1970-01-01`);
  return dayStart(date);
}
