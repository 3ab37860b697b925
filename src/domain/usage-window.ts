// The windows of the usage query (whole days from running totals, raw events at the ends) and of a report (limits, buckets, UTC-day parts).
import { invalidParameter } from "./errors.js";
import { DAY_SECONDS, eachBucket, type TimeBucket } from "./local-time.js";
import { MAX_HOUR_REPORT_DAYS, MAX_REPORT_DAYS } from "./report-limits.js";
import { MAX_TIMESTAMP } from "./usage-event.js";

export const MAX_WINDOW_DAYS = 180;

/** Seconds [from, to) inside one UTC day, whose raw events are added (1) or subtracted (-1). */
export interface RawRange {
  from: number;
  to: number;
  sign: 1 | -1;
}

export interface WindowPlan {
  /**
   * Each member's running totals through `plusThrough` (every event of that UTC day or before) minus those through `minusThrough`:
   * the whole days after `minusThrough` up to `plusThrough`. Absent when the window is read from raw events alone.
   */
  runningTotals?: { plusThrough: number; minusThrough: number };
  raw: RawRange[];
}

/** The latest end_time a window may have, and what it is. */
interface LatestEnd {
  seconds: number;
  meaning: string;
}

const LATEST_QUERY_END: LatestEnd = { seconds: Number.MAX_SAFE_INTEGER, meaning: "2^53 - 1, the largest accepted" };

/** [start_time, end_time), at most `maxDays` long, ending by `latest`. */
export function checkWindow(start: bigint, end: bigint, maxDays = MAX_WINDOW_DAYS, latest = LATEST_QUERY_END): { start: number; end: number } {
  if (end <= start) throw invalidParameter(`end_time must be after start_time (start_time ${start}, end_time ${end})`);
  const span = end - start;
  const maxSeconds = maxDays * DAY_SECONDS;
  if (span > BigInt(maxSeconds)) throw invalidParameter(`end_time - start_time: ${span} seconds > ${maxSeconds} (${maxDays} days)`);
  if (end > BigInt(latest.seconds)) throw invalidParameter(`end_time: ${end} > ${latest.seconds} (${latest.meaning})`);
  return { start: Number(start), end: Number(end) };
}

/** The fewest seconds of raw events: running totals between a midnight at or next to each end, or, if no better, raw events alone. */
export function planWindow(start: number, end: number, withRunningTotals = true): WindowPlan {
  let best: { low: number; high: number; seconds: number } | undefined; // none better than the raw events alone (end - start seconds)
  for (const low of withRunningTotals ? midnightsBeside(start) : []) {
    for (const high of midnightsBeside(end)) {
      const seconds = Math.abs(start - low) + Math.abs(end - high);
      if (low < high && seconds < (best?.seconds ?? end - start)) best = { low, high, seconds };
    }
  }
  if (!best) return { raw: bucketParts([{ start, end, date: "" }], start, end).map(({ from, to }) => ({ from, to, sign: 1 })) };
  const { low, high } = best;
  const raw: RawRange[] = [];
  if (low !== start) raw.push({ from: Math.min(low, start), to: Math.max(low, start), sign: low < start ? -1 : 1 });
  if (high !== end) raw.push({ from: Math.min(high, end), to: Math.max(high, end), sign: high < end ? 1 : -1 });
  return { runningTotals: { plusThrough: high / DAY_SECONDS - 1, minusThrough: low / DAY_SECONDS - 1 }, raw };
}

function midnightsBeside(ts: number): number[] {
  const before = dayOf(ts) * DAY_SECONDS;
  return before === ts ? [ts] : [before, before + DAY_SECONDS];
}

export const dayOf = (ts: number) => Math.floor(ts / DAY_SECONDS);

/** The latest end of a report's or export's window: just after the latest event. */
const LATEST_REPORT_END: LatestEnd = { seconds: MAX_TIMESTAMP + 1, meaning: "10000-01-01T00:00:00Z: no event is later" };

export type BucketKind = "day" | "hour" | "none";

/** Empty means "day". */
export function bucketKind(text: string): BucketKind {
  if (text === "" || text === "day") return "day";
  if (text === "hour" || text === "none") return text;
  throw invalidParameter(`bucket: ${JSON.stringify(text)} is not one of "day", "hour", "none"`);
}

/** [start_time, end_time) within the report's (and the export's) limits: 366 days, 31 for hour buckets, ending by LATEST_REPORT_END. */
export function checkReportWindow(start: bigint, end: bigint, kind: BucketKind): { start: number; end: number } {
  return checkWindow(start, end, kind === "hour" ? MAX_HOUR_REPORT_DAYS : MAX_REPORT_DAYS, LATEST_REPORT_END);
}

export function planBuckets(start: number, end: number, zone: string, kind: BucketKind): TimeBucket[] {
  return kind === "none" ? [{ start, end, date: "" }] : [...eachBucket(start, end, zone, kind)];
}

/** [start, end) (inside the buckets) cut at the buckets' edges and UTC midnights: each part lies in one bucket and one UTC day of raw events. */
export function bucketParts(buckets: readonly TimeBucket[], start: number, end: number): Array<{ bucket: number; from: number; to: number }> {
  const parts: Array<{ bucket: number; from: number; to: number }> = [];
  for (let from = start, bucket = buckets.findIndex((b) => b.start <= start && start < b.end); from < end && bucket >= 0 && bucket < buckets.length;) {
    const to = Math.min(end, buckets[bucket]!.end, (dayOf(from) + 1) * DAY_SECONDS);
    parts.push({ bucket, from, to });
    from = to;
    if (to === buckets[bucket]!.end) bucket++;
  }
  return parts;
}
