// Local time for the usage analytics: IANA zone names, and a window's buckets from local midnight (or the local hour), in Unix seconds.
// A daylight-saving day lasts 23 or 25 hours, and +05:30 and +05:45 zones work: a window's offsets are found once (ZoneOffsets), a
// bucket with one offset throughout is plain arithmetic, and luxon works out the buckets an offset change falls in.
import { DateTime, IANAZone } from "luxon";
import { invalidParameter } from "./errors.js";

export const DEFAULT_TIME_ZONE = "UTC";

/** A bucket of a window: [start, end) in Unix seconds; `date` (YYYY-MM-DD) for day buckets. */
export interface TimeBucket {
  start: number;
  end: number;
  date: string;
}

/** The zone a request asks for (one the platform knows, case-insensitively, else an error naming `field`), or `fallback` (the enterprise's). */
export function zoneOrDefault(requested: string | undefined, fallback: string, field: string): string {
  if (requested === undefined || requested === "") return fallback;
  if (!IANAZone.isValidZone(requested)) throw invalidParameter(`${field}: ${JSON.stringify(requested)} is not an IANA time zone name (e.g. "UTC", "Asia/Kolkata")`);
  return requested;
}

/**
 * The buckets of [start, end) in `zone` from local midnight to midnight, or from one local hour to the next (its offset may be
 * a half or quarter hour), the first and last cut at the window's edges; one at a time, for a window of any length (the export's).
 */
export function* eachBucket(start: number, end: number, zone: string, unit: "day" | "hour"): Generator<TimeBucket> {
  const offsets = new ZoneOffsets(zone, start - DAY_SECONDS, end + DAY_SECONDS);
  // Past 9999 a date is no longer YYYY-MM-DD: a window up to 10000-01-01 UTC reaches there in zones
  // east of UTC. Checked before the first bucket, so that an export fails before its first row.
  if (unit === "day" && !/^\d{4}-\d\d-\d\d$/.test(offsets.dateOf(end - 1))) {
    throw invalidParameter(`end_time: ${end} falls on a local date past 9999-12-31 in ${zone}`);
  }
  let at = DateTime.fromSeconds(start, { zone }).startOf(unit).toSeconds();
  while (at < end) {
    const next = offsets.nextStart(at, unit);
    yield { start: Math.max(start, at), end: Math.min(end, next), date: unit === "day" ? offsets.dateOf(at) : "" };
    at = next;
  }
}

export const DAY_SECONDS = 86_400;
export const HOUR_SECONDS = 3_600;
const UNIT_SECONDS = { day: DAY_SECONDS, hour: HOUR_SECONDS } as const;

/**
 * A zone's UTC offset over a window [from, to): probed once a day, each change found by bisection to the second. Within the window,
 * offsets and the starts of days and hours that see no change are arithmetic; the rest, and anything outside it, is luxon's.
 */
export class ZoneOffsets {
  /** Segment i is [starts[i], starts[i + 1]) (the last to `to`) with offset offsets[i], in seconds. */
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

  /** The offset at `ts`, in seconds east of UTC. */
  offsetAt(ts: number): number {
    if (ts < this.from || ts >= this.to) return this.offsetOf(ts);
    return this.offsets[this.segmentOf(ts)]!;
  }

  /** Whether the offset is the same over all of [a, b] (both inside the window). */
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
   * The start of the local day or hour after the one that starts at `start`: a unit later when `start` is on the local boundary
   * (a day that began after a jump over midnight is not) and the offset holds until then.
   */
  nextStart(start: number, unit: "day" | "hour"): number {
    const next = start + UNIT_SECONDS[unit];
    if (this.constantOver(start, next) && mod(start + this.offsetAt(start), UNIT_SECONDS[unit]) === 0) return next;
    return nextStart(DateTime.fromSeconds(start, { zone: this.zone }), unit).toSeconds();
  }

  /** The local day holding `ts`: [start, end). */
  dayAround(ts: number): { start: number; end: number } {
    const start = ts - mod(ts + this.offsetAt(ts), DAY_SECONDS);
    if (this.constantOver(start, start + DAY_SECONDS)) return { start, end: start + DAY_SECONDS };
    return localDayAround(ts, this.zone);
  }

  /** The local date (YYYY-MM-DD) of `ts`. */
  dateOf(ts: number): string {
    return new Date((ts + this.offsetAt(ts)) * 1000).toISOString().slice(0, 10);
  }
}

/** a modulo m, never negative (for times before an offset's origin). */
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

/** The local day of `zone` holding the Unix second `ts`: [start, end) in Unix seconds. */
export function localDayAround(ts: number, zone: string): { start: number; end: number } {
  const local = DateTime.fromSeconds(ts, { zone }).startOf("day");
  return { start: local.toSeconds(), end: nextStart(local, "day").toSeconds() };
}

/**
 * A reader of `zone`'s UTC offset at a Unix second, in seconds east of UTC, from the platform's Intl data. It keeps one formatter
 * (making one is slow); a luxon DateTime's offset, which formats to parts, is several times slower.
 */
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

/** The local date (YYYY-MM-DD) of a Unix second in `zone`. */
export function localDateOf(seconds: number, zone: string): string {
  return DateTime.fromSeconds(seconds, { zone }).toISODate()!;
}

/** The window [start, end) of local dates `from` to `to`, both inclusive (YYYY-MM-DD), in `zone`. */
export function dateRangeWindow(from: string, to: string, zone: string, fields: [from: string, to: string]): { start: number; end: number; days: number } {
  const first = localMidnight(from, zone, fields[0]);
  const last = localMidnight(to, zone, fields[1]);
  if (last < first) throw invalidParameter(`${fields[1]}: ${to} is before ${fields[0]} ${from}`);
  // From a day that began after a jump over midnight (01:00), adding a day alone would end the window an hour into the next one.
  const next = last.plus({ days: 1 }).startOf("day");
  return { start: first.toSeconds(), end: next.toSeconds(), days: Math.round(next.diff(first, "days").days) };
}

/** Local midnight of a YYYY-MM-DD date in `zone`, or an error naming `field`. */
export function localMidnight(text: string, zone: string, field: string): DateTime {
  const date = /^\d{4}-\d{2}-\d{2}$/.test(text) ? DateTime.fromISO(text, { zone }) : undefined;
  if (!date?.isValid || date.year < 1970) throw invalidParameter(`${field}: ${JSON.stringify(text)} is not a date YYYY-MM-DD from 1970-01-01`);
  return date.startOf("day");
}
