// The usage query's window (docs/api-rules.md) and how it is read (docs/architecture.md, Usage storage): the whole days as the
// difference of two running-total rows per member (storage/usage-running-totals.ts), the seconds at each end from raw events, so
// that the rows read depend on neither the window's length nor the number of events stored.
import { invalidParameter } from "./errors.js";
import { DAY_SECONDS } from "./local-time.js";

export const MAX_WINDOW_DAYS = 180;

/** A range of seconds [from, to) inside one UTC day, whose raw events are added (1) or subtracted (-1). */
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

/** A request's window [start_time, end_time): at most `maxDays` long (the usage query's 180 by default). */
export function checkWindow(start: bigint, end: bigint, maxDays = MAX_WINDOW_DAYS): { start: number; end: number } {
  if (end <= start) throw invalidParameter(`end_time must be after start_time (start_time ${start}, end_time ${end})`);
  const span = end - start;
  const maxSeconds = maxDays * DAY_SECONDS;
  if (span > BigInt(maxSeconds)) throw invalidParameter(`end_time - start_time: ${span} seconds > ${maxSeconds} (${maxDays} days)`);
  if (end > BigInt(Number.MAX_SAFE_INTEGER)) throw invalidParameter(`end_time: ${end} is out of range`);
  return { start: Number(start), end: Number(end) };
}

/**
 * The plan reading the fewest seconds of raw events: running totals between a midnight at or next to each end (the earlier before
 * the later), or, for a short window or without running totals (no current usage layout), the raw events alone.
 */
export function planWindow(start: number, end: number, withRunningTotals = true): WindowPlan {
  let best: { low: number; high: number } | undefined;
  let bestSeconds = end - start; // the raw events alone
  for (const low of withRunningTotals ? midnightsBeside(start) : []) {
    for (const high of midnightsBeside(end)) {
      const seconds = Math.abs(start - low) + Math.abs(end - high);
      if (low < high && seconds < bestSeconds) {
        best = { low, high };
        bestSeconds = seconds;
      }
    }
  }
  if (!best) return { raw: splitAtMidnight(start, end) };
  const { low, high } = best;
  const raw: RawRange[] = [];
  if (low !== start) raw.push({ from: Math.min(low, start), to: Math.max(low, start), sign: low < start ? -1 : 1 });
  if (high !== end) raw.push({ from: Math.min(high, end), to: Math.max(high, end), sign: high < end ? 1 : -1 });
  return { runningTotals: { plusThrough: high / DAY_SECONDS - 1, minusThrough: low / DAY_SECONDS - 1 }, raw };
}

/** The midnight at or before a second and the one after it (one value when it is a midnight). */
function midnightsBeside(ts: number): number[] {
  const before = dayOf(ts) * DAY_SECONDS;
  return before === ts ? [ts] : [before, before + DAY_SECONDS];
}

/** The UTC day a second falls in. */
export const dayOf = (ts: number) => Math.floor(ts / DAY_SECONDS);

function splitAtMidnight(from: number, to: number): RawRange[] {
  const pieces: RawRange[] = [];
  while (from < to) {
    const next = Math.min(to, (dayOf(from) + 1) * DAY_SECONDS);
    pieces.push({ from, to: next, sign: 1 });
    from = next;
  }
  return pieces;
}
