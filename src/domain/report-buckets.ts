// A usage report's time buckets: the window's limits by bucket kind, the buckets (a zone's days or hours, or the whole window) and their parts.
import { invalidParameter } from "./errors.js";
import { DAY_SECONDS, eachBucket, type TimeBucket } from "./local-time.js";
import { MAX_HOUR_REPORT_DAYS, MAX_REPORT_DAYS } from "./report-limits.js";
import { MAX_TIMESTAMP } from "./usage-event.js";
import { checkWindow, dayOf } from "./usage-window.js";

/** The latest end of a report's or export's window: 10000-01-01T00:00:00Z, just after the latest event. */
const LATEST_REPORT_END = MAX_TIMESTAMP + 1;

export type BucketKind = "day" | "hour" | "none";

/** The request's `bucket`: empty means "day" (validation allows only these words). */
export function bucketKind(text: string): BucketKind {
  if (text === "" || text === "day") return "day";
  if (text === "hour" || text === "none") return text;
  throw invalidParameter(`bucket: ${JSON.stringify(text)} is not one of "day", "hour", "none"`);
}

/** [start_time, end_time) within the report's (and the export's) limits: 366 days, 31 for hour buckets, ending by LATEST_REPORT_END. */
export function checkReportWindow(start: bigint, end: bigint, kind: BucketKind): { start: number; end: number } {
  const window = checkWindow(start, end, kind === "hour" ? MAX_HOUR_REPORT_DAYS : MAX_REPORT_DAYS);
  if (window.end > LATEST_REPORT_END) {
    throw invalidParameter(`end_time: ${end} > ${LATEST_REPORT_END} (10000-01-01T00:00:00Z: no event is later)`);
  }
  return window;
}

/** Every bucket of the window in time order, the first and last cut at its edges. */
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
