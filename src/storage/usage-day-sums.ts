// Sums of new usage events per (member, day, model), held until an ingestion adds them to the running totals (usage-running-totals.ts).
import type { EventValue } from "../domain/usage-event.js";
import { SumEntries } from "../domain/usage-totals.js";

/** Sums events per (member key, day, model id) in typed arrays (SumEntries), no object per sum. */
export class DaySums {
  /** (member, day), as daySumKey → its first entry; entries of a (member, day) are chained by `entries.next` (-1 ends a chain). */
  private readonly firstEntry = new Map<number, number>();
  /**
   * The key of the last event and its first entry. Ingestions add events in the table's key order, each member's events of a day
   * together, so most events skip the Map.
   */
  private lastKey = -1;
  private lastFirst = -1;
  readonly entries = new SumEntries();

  /** How many (member, day) sums are held. */
  get size(): number {
    return this.firstEntry.size;
  }

  /** Adds one event: its values as numbers (the API's, at most 10^12) or bigints (callers below it). */
  add(member: number, model: number, day: number, inputTokens: EventValue, outputTokens: EventValue, basicMicros: EventValue, payGoMicros: EventValue): void {
    const key = daySumKey(member, day);
    const first = key === this.lastKey ? this.lastFirst : this.firstEntry.get(key) ?? -1;
    const entries = this.entries;
    let entry = first;
    let last = -1;
    while (entry !== -1 && entries.model[entry] !== model) entry = entries.next[(last = entry)]!;
    if (entry === -1) {
      entry = entries.add(model);
      if (last === -1) this.firstEntry.set(key, entry);
      else entries.next[last] = entry;
    }
    this.lastKey = key;
    this.lastFirst = first === -1 ? entry : first;
    entries.sums.addEvent(entry, inputTokens, outputTokens, basicMicros, payGoMicros);
  }

  /** The keys held, in order: by member, then day. */
  keys(): Float64Array {
    return Float64Array.from(this.firstEntry.keys()).sort();
  }

  /** The first entry of a key held. */
  firstOf(key: number): number {
    return this.firstEntry.get(key)!;
  }

  /** Holds nothing again. */
  clear(): void {
    this.firstEntry.clear();
    this.lastKey = -1;
    this.entries.sums.clear();
  }
}

/** A (member, day)'s key: keys sort by member, then day. Exact (below 2^53) for member keys below 2^31. */
export function daySumKey(member: number, day: number): number {
  if (member >= 2 ** 31) throw new Error(`day sums: member key ${member} is past 2^31 - 1`);
  return member * DAY_SPAN + day;
}

export function memberOfKey(key: number): number {
  return Math.floor(key / DAY_SPAN);
}

export function dayOfKey(key: number): number {
  return key % DAY_SPAN;
}

/** Days a member's keys span: past the last day of year 9999 (the latest timestamp an event may have). */
const DAY_SPAN = 2 ** 22;
