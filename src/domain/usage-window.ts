// The usage query's window (contracts section 6) and how it is read. Whole UTC days are covered by
// rollup periods of 28, 7 and 1 days (Monday-aligned; each length divides the one above, so a
// 180-day window needs at most 24 of them: six of 28 days, three weeks and six days on each side),
// and the partial first and last day are read from the raw events. The rows read depend on members,
// periods and the events of two days, never on the number of events in the store. (A 112-day tier
// would save about three rows a member and cost every ingestion a fourth cell write.)
import { invalidParameter } from "./errors.js";

export const DAY_SECONDS = 86_400;
export const MAX_WINDOW_DAYS = 180;
export const MAX_WINDOW_SECONDS = MAX_WINDOW_DAYS * DAY_SECONDS;

/** Rollup period lengths in days, longest first. Day 4 after the epoch (1970-01-05) was a Monday. */
export const ROLLUP_TIERS = [28, 7, 1] as const;
const MONDAY_OFFSET = 3;

/** The period of a tier that holds a UTC day (days since the epoch). */
export const periodOf = (tierDays: number, day: number) => Math.floor((day + MONDAY_OFFSET) / tierDays);
const periodStartDay = (tierDays: number, period: number) => tierDays * period - MONDAY_OFFSET;

export interface RollupRange {
  tierDays: number;
  /** Periods [fromPeriod, toPeriod) of that tier. */
  fromPeriod: number;
  toPeriod: number;
}

export interface WindowPlan {
  rollups: RollupRange[];
  /** Second ranges [from, to) read from the raw events, each inside one UTC day. */
  rawRanges: Array<[number, number]>;
}

export function checkWindow(start: bigint, end: bigint): { start: number; end: number } {
  if (end <= start) throw invalidParameter(`end_time must be after start_time (start_time ${start}, end_time ${end})`);
  const span = end - start;
  if (span > BigInt(MAX_WINDOW_SECONDS)) {
    throw invalidParameter(`end_time - start_time: ${span} seconds > ${MAX_WINDOW_SECONDS} (180 days)`);
  }
  if (end > BigInt(Number.MAX_SAFE_INTEGER)) throw invalidParameter(`end_time: ${end} is out of range`);
  return { start: Number(start), end: Number(end) };
}

export function planWindow(start: number, end: number): WindowPlan {
  const firstDay = Math.ceil(start / DAY_SECONDS);
  const endDay = Math.floor(end / DAY_SECONDS);
  if (firstDay >= endDay) return { rollups: [], rawRanges: splitAtMidnight(start, end) };
  const rollups: RollupRange[] = [];
  const rawDays: Array<[number, number]> = [];
  cover(firstDay, endDay, 0, rollups, rawDays);
  const raw: Array<[number, number]> = [[start, firstDay * DAY_SECONDS]];
  for (const [from, to] of rawDays) raw.push([from * DAY_SECONDS, to * DAY_SECONDS]);
  raw.push([endDay * DAY_SECONDS, end]);
  return { rollups, rawRanges: mergeRanges(raw).flatMap(([from, to]) => splitAtMidnight(from, to)) };
}

/** Covers whole days [fromDay, toDay) with the longest periods that fit, then shorter ones, then raw days. */
function cover(fromDay: number, toDay: number, tier: number, rollups: RollupRange[], rawDays: Array<[number, number]>): void {
  if (fromDay >= toDay) return;
  const tierDays = ROLLUP_TIERS[tier];
  if (tierDays === undefined) {
    rawDays.push([fromDay, toDay]);
    return;
  }
  const firstPeriod = Math.ceil((fromDay + MONDAY_OFFSET) / tierDays);
  const endPeriod = Math.floor((toDay + MONDAY_OFFSET) / tierDays);
  if (firstPeriod >= endPeriod) {
    cover(fromDay, toDay, tier + 1, rollups, rawDays);
    return;
  }
  cover(fromDay, periodStartDay(tierDays, firstPeriod), tier + 1, rollups, rawDays);
  rollups.push({ tierDays, fromPeriod: firstPeriod, toPeriod: endPeriod });
  cover(periodStartDay(tierDays, endPeriod), toDay, tier + 1, rollups, rawDays);
}

/** The UTC day a second falls in. */
export const dayOf = (ts: number) => Math.floor(ts / DAY_SECONDS);

function splitAtMidnight(from: number, to: number): Array<[number, number]> {
  const pieces: Array<[number, number]> = [];
  while (from < to) {
    const next = Math.min(to, (dayOf(from) + 1) * DAY_SECONDS);
    pieces.push([from, next]);
    from = next;
  }
  return pieces;
}

function mergeRanges(ranges: Array<[number, number]>): Array<[number, number]> {
  const sorted = ranges.filter(([from, to]) => from < to).sort((a, b) => a[0] - b[0]);
  const merged: Array<[number, number]> = [];
  for (const range of sorted) {
    const last = merged[merged.length - 1];
    if (last && range[0] <= last[1]) last[1] = Math.max(last[1], range[1]);
    else merged.push([range[0], range[1]]);
  }
  return merged;
}
