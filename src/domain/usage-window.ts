// The usage query's window (contracts section 6) and how it is read. Whole UTC days are covered by
// rollup cells of 49-, 7- and 1-day periods (Monday-aligned; each length divides the one above), and
// the partial first and last day are read from the raw events. An uneven end may also be read as
// the whole enclosing period minus the days outside the window (a week minus two days is three cells,
// five single days are five): the plan takes whichever needs fewer cells, so a 180-day window needs
// at most 11 per member and 10.5 on average (with 28-day periods 13 and 11.6; any other multiple of
// 7 did no better). The rows read depend on members, periods and the events of two days, never on
// the number of events in the store. (A fourth tier would save about two cells a member and cost
// every ingestion a fourth cell write.)
import { invalidParameter } from "./errors.js";

export const DAY_SECONDS = 86_400;
export const MAX_WINDOW_DAYS = 180;
export const MAX_WINDOW_SECONDS = MAX_WINDOW_DAYS * DAY_SECONDS;

/** Rollup period lengths in days, longest first. Day 4 after the epoch (1970-01-05) was a Monday. */
export const ROLLUP_TIERS = [49, 7, 1] as const;
const MONDAY_OFFSET = 3;

/** The period of a tier that holds a UTC day (days since the epoch). */
export const periodOf = (tierDays: number, day: number) => Math.floor((day + MONDAY_OFFSET) / tierDays);
const periodStartDay = (tierDays: number, period: number) => tierDays * period - MONDAY_OFFSET;

/** One rollup cell of every member, added (sign 1) or subtracted (sign -1). */
export interface PlannedCell {
  tierDays: number;
  period: number;
  sign: 1 | -1;
}

export interface WindowPlan {
  cells: PlannedCell[];
  /** Second ranges [from, to) read from the raw events (added), each inside one UTC day. */
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
  if (firstDay >= endDay) return { cells: [], rawRanges: splitAtMidnight(start, end) };
  // The partial first and last day; either is empty when the window starts or ends at midnight.
  const raw: Array<[number, number]> = [[start, firstDay * DAY_SECONDS], [endDay * DAY_SECONDS, end]];
  return { cells: cover(firstDay, endDay, 0, 1), rawRanges: raw.filter(([from, to]) => from < to) };
}

/**
 * The fewest cells whose signed sum is the days [fromDay, toDay), using tiers from `tier` on: the
 * periods of this tier inside the range, and at each end either the leftover days in finer cells or
 * one more period of this tier minus the days of it outside the range.
 */
function cover(fromDay: number, toDay: number, tier: number, sign: 1 | -1): PlannedCell[] {
  if (fromDay >= toDay) return [];
  const tierDays = ROLLUP_TIERS[tier]!;
  if (tier === ROLLUP_TIERS.length - 1) {
    return Array.from({ length: toDay - fromDay }, (_, i) => ({ tierDays, period: periodOf(tierDays, fromDay + i), sign }));
  }
  const finer = cover(fromDay, toDay, tier + 1, sign);
  // Every way to choose this tier's periods: from the first one at or after fromDay (or the one
  // before it), to the last one ending at or before toDay (or the one after it).
  const inner = Math.ceil((fromDay + MONDAY_OFFSET) / tierDays);
  const outer = Math.floor((toDay + MONDAY_OFFSET) / tierDays);
  let best = finer;
  for (const first of new Set([inner, periodOf(tierDays, fromDay)])) {
    for (const last of new Set([outer, Math.ceil((toDay + MONDAY_OFFSET) / tierDays)])) {
      if (first >= last) continue;
      const spanFrom = periodStartDay(tierDays, first);
      const spanTo = periodStartDay(tierDays, last);
      const candidate = [
        ...(spanFrom <= fromDay ? cover(spanFrom, fromDay, tier + 1, flip(sign)) : cover(fromDay, spanFrom, tier + 1, sign)),
        ...Array.from({ length: last - first }, (_, i) => ({ tierDays, period: first + i, sign })),
        ...(spanTo >= toDay ? cover(toDay, spanTo, tier + 1, flip(sign)) : cover(spanTo, toDay, tier + 1, sign)),
      ];
      if (candidate.length < best.length) best = candidate;
    }
  }
  return best;
}

const flip = (sign: 1 | -1): 1 | -1 => (sign === 1 ? -1 : 1);

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
