// Sums of new usage events per (member, day, model), held until an ingestion adds them to the running totals (usage-running-totals.ts) as
// day-sum frames.
import type { EventValue } from "../domain/usage-event.js";
import { SumEntries } from "../domain/usage-totals.js";
import { MAX_ENTRY_BYTES, VarintReader, writeEntry, writeVarint } from "./usage-sums-codec.js";
import { grown } from "../domain/typed-arrays.js";

/** Sums events per (member key, day, model id) in typed arrays (SumEntries), no object per sum. */
export class DaySums {
  /** (member, day) → its first entry; entries of a (member, day) are chained by `next`. */
  private readonly firstEntry = new Map<number, number>();
  /** Per (member, day) held, in the order first seen: member, day and first entry. */
  private slots = new Float64Array(3 * 1024); // member keys may pass 2^31
  private slotCount = 0;
  /**
   * Per member below LAST_DAY_MEMBERS: the day of its latest event and that (member, day)'s first entry (-1 for none). Ingestions add
   * events in the table's key order, each member's events of a day together, so most events skip the Map.
   */
  private lastDay = new Int32Array(1024).fill(-1);
  private lastFirst = new Int32Array(1024);
  private readonly entries = new SumEntries();

  /** How many (member, day) sums are held. */
  get size(): number {
    return this.slotCount;
  }

  /** Adds one event: its values as numbers (the API's, at most 10^12) or bigints (callers below it). */
  add(member: number, model: number, day: number, inputTokens: EventValue, outputTokens: EventValue, basicMicros: EventValue, payGoMicros: EventValue): void {
    let entry = member < this.lastDay.length && this.lastDay[member] === day ? this.lastFirst[member]! : this.firstOf(member, day);
    const entries = this.entries;
    let last = -1;
    while (entry !== -1 && entries.model[entry] !== model) entry = entries.next[(last = entry)]!;
    if (entry === -1) {
      entry = entries.add(model, -1);
      if (last === -1) this.newSlot(member, day, entry);
      else entries.next[last] = entry;
    }
    entries.sums.addEvent(entry, inputTokens, outputTokens, basicMicros, payGoMicros);
  }

  /** The held sums as frames (FRAMES below), in one buffer, leaving this empty; throws SumLimitError past 2^64 - 1. */
  takeFrames(): Uint8Array {
    const entries = this.entries;
    let out = new Uint8Array(this.slotCount * HEADER_ROOM + entries.count * MAX_ENTRY_BYTES);
    let at = 0;
    for (const slot of this.slotsInOrder()) {
      const member = this.slots[3 * slot]!;
      const day = this.slots[3 * slot + 1]!;
      // The sums first, after room for the header: their length is part of it.
      const start = at + HEADER_ROOM;
      let end = start;
      for (let entry = this.slots[3 * slot + 2]!; entry !== -1; entry = entries.next[entry]!) end = writeEntry(out, end, entries, entry);
      const headerEnd = writeVarint(out, writeVarint(out, writeVarint(out, at, member), day), end - start);
      out.copyWithin(headerEnd, start, end);
      at = headerEnd + (end - start);
    }
    this.firstEntry.clear();
    this.slotCount = 0;
    this.lastDay.fill(-1);
    entries.clear();
    return out.subarray(0, at);
  }

  /** The slots held, ordered by member, then day. */
  private slotsInOrder(): Int32Array {
    const keys = new Float64Array(this.slotCount);
    for (let slot = 0; slot < this.slotCount; slot++) keys[slot] = this.slots[3 * slot]! * DAY_SPAN + this.slots[3 * slot + 1]!;
    return Int32Array.from(keys.keys()).sort((a, b) => keys[a]! - keys[b]!);
  }

  /** The first entry of (member, day), or -1; remembered as the member's latest day. */
  private firstOf(member: number, day: number): number {
    const entry = this.firstEntry.get(member * DAY_SPAN + day) ?? -1;
    if (entry !== -1) this.remember(member, day, entry);
    return entry;
  }

  private newSlot(member: number, day: number, entry: number): void {
    this.firstEntry.set(member * DAY_SPAN + day, entry);
    if (3 * this.slotCount === this.slots.length) this.slots = grown(this.slots);
    this.slots.set([member, day, entry], 3 * this.slotCount++);
    this.remember(member, day, entry);
  }

  private remember(member: number, day: number, entry: number): void {
    if (member >= LAST_DAY_MEMBERS) return;
    if (member >= this.lastDay.length) {
      this.lastDay = grown(this.lastDay, member + 1, -1);
      this.lastFirst = grown(this.lastFirst, member + 1);
    }
    this.lastDay[member] = day;
    this.lastFirst[member] = entry;
  }
}

/**
 * FRAMES. What takeFrames makes, in (member, day) order: per (member, day), varint member, varint day, varint length, then the packed totals
 * (usage-sums-codec.ts) of the member's events of that day. A cursor reads them: `next()` moves
 * to the next frame (false past the last) and leaves its member, day and the range of its packed totals.
 */
export class FrameCursor {
  member = 0;
  day = 0;
  start = 0;
  end = 0;
  private readonly reader: VarintReader;

  constructor(readonly frames: Uint8Array, from = 0, private readonly to = frames.length) {
    this.reader = new VarintReader(frames, from);
  }

  next(): boolean {
    const reader = this.reader;
    if (reader.at >= this.to) return false;
    this.member = reader.next();
    this.day = reader.next();
    const length = reader.next();
    this.start = reader.at;
    this.end = reader.at = this.start + length;
    return true;
  }
}

/** Days a member's slot key spans: past the last day of year 9999 (the latest timestamp an event may have). */
const DAY_SPAN = 2 ** 22;
/** A frame header's room: three varints below 2^32. */
const HEADER_ROOM = 15;
/** Members whose latest day is kept in arrays; larger member keys use the Map. */
const LAST_DAY_MEMBERS = 1 << 16;
