// The report's day cache: a scope's groups per day, so a report of months reads one short row a day; an entry serves while its stamp holds.
import { LRUCache } from "lru-cache";
import type { PeriodFigures } from "../domain/report-cells.js";
import { takeTurn } from "./take-turn.js";

/** The memory the entries may take, counted as their bitmaps' bytes plus a fixed cost per group. */
const MAX_CACHE_BYTES = 64 * 1024 * 1024;
/** Days of stored rows read per statement: a month, so that a report's memory stays a month's rows. */
export const DAYS_READ_AT_ONCE = 31;
/** What an entry costs besides its bitmaps: per group (its sums and fields), and per day. */
const GROUP_BYTES = 160;
const DAY_BYTES = 120;

interface DayEntry {
  stamp: string;
  withMembers: boolean;
  groups: PeriodFigures[];
}

export type DayLoader<K = number> = (days: K[], withMembers: boolean) => Promise<Map<K, PeriodFigures[]>>;

export class ReportDayCache {
  private readonly entries = new LRUCache<string, DayEntry>({
    maxSize: MAX_CACHE_BYTES,
    sizeCalculation: (entry) => DAY_BYTES + entry.groups.reduce((bytes, group) => bytes + GROUP_BYTES + (group.members?.length ?? 0), 0),
  });

  /** `scope`'s groups on each day of `stamps` (day -> stamp): kept ones whose stamp holds (with members if asked), others made by `load` and kept. */
  async days<K extends number | string>(scope: string, stamps: ReadonlyMap<K, string>, withMembers: boolean, load: DayLoader<K>,
    signal: AbortSignal): Promise<Map<K, PeriodFigures[]>> {
    const found = new Map<K, PeriodFigures[]>();
    const missing: K[] = [];
    for (const [day, stamp] of stamps) {
      const entry = this.entries.get(`${scope}\n${day}`);
      if (entry && entry.stamp === stamp && (entry.withMembers || !withMembers)) found.set(day, entry.groups);
      else missing.push(day);
    }
    for (let at = 0; at < missing.length; at += DAYS_READ_AT_ONCE) {
      await takeTurn(signal);
      const days = missing.slice(at, at + DAYS_READ_AT_ONCE);
      const loaded = await load(days, withMembers);
      for (const day of days) {
        const groups = loaded.get(day) ?? []; // a day with no usage in the scope's groups is kept too
        found.set(day, groups);
        this.entries.set(`${scope}\n${day}`, { stamp: stamps.get(day)!, withMembers, groups });
      }
    }
    return found;
  }
}
