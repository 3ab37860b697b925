// The usage query's window (contracts section 6) and how it is read: whole UTC days from the daily
// rollup, the partial first and last day from the raw events. Depends on members, models and days,
// never on the number of events.
import { invalidParameter } from "./errors.js";

export const DAY_SECONDS = 86_400;
export const MAX_WINDOW_DAYS = 180;
export const MAX_WINDOW_SECONDS = MAX_WINDOW_DAYS * DAY_SECONDS;

export interface WindowPlan {
  /** Whole days [firstDay, endDay) read from the daily rollup; empty when firstDay >= endDay. */
  firstDay: number;
  endDay: number;
  /** Second ranges [from, to) read from the raw events. */
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
  if (firstDay >= endDay) return { firstDay, endDay: firstDay, rawRanges: [[start, end]] };
  const rawRanges: Array<[number, number]> = [];
  if (start < firstDay * DAY_SECONDS) rawRanges.push([start, firstDay * DAY_SECONDS]);
  if (endDay * DAY_SECONDS < end) rawRanges.push([endDay * DAY_SECONDS, end]);
  return { firstDay, endDay, rawRanges };
}
