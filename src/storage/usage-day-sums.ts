// Sums of new usage events per (member, day), held in memory until an ingestion adds them to the
// stored running totals (usage-running-totals.ts). They travel between threads as day-sum
// frames: an NDJSON import sums its events on the worker thread that parses them, where the main
// thread, which writes, has no time to spare (summing was about 9% of its work).
import type { EventValue } from "../domain/usage-event.js";
import { EVENTS, SUMS, SUM_LIMIT, SumLimitError, TotalsByModel } from "../domain/usage-totals.js";
import { MAX_ENTRY_BYTES, VarintReader, addPackedTotals, writeBigVarint, writeVarint } from "./usage-sums-codec.js";
import { grown } from "../domain/typed-arrays.js";

/** A member's sums per day, in day order. */
export type MemberDays = Array<[day: number, sums: DaySum]>;

/**
 * The new events of one (member, day): summed one by one here, or packed totals from day-sum
 * frames, kept packed until they are added to a running total (decoding them into objects first
 * cost an import's writing thread about 4% of its time), or both.
 */
export class DaySum {
  /** Events added (and taken away) one by one. */
  totals: TotalsByModel | undefined;
  /** Packed totals: frames, start, end and model ids, per part (usually one). */
  private packed: Array<[frames: Uint8Array, start: number, end: number, modelIds: ArrayLike<number>]> | undefined;

  /** Adds these sums to `target`. */
  addTo(target: TotalsByModel): void {
    if (this.totals) target.addTotals(this.totals);
    if (this.packed) for (const [frames, start, end, modelIds] of this.packed) addPackedTotals(target, frames, start, end, modelIds);
  }

  addPacked(frames: Uint8Array, start: number, end: number, modelIds: ArrayLike<number>): void {
    (this.packed ??= []).push([frames, start, end, modelIds]);
  }

  /**
   * Leaves out a model whose events were all taken away again (TotalsByModel.addEvent with -1);
   * returns whether any model is left. Only sums taken away (`subtract`, `addPacked` with -1) can leave such a model.
   */
  prune(): boolean {
    if (!this.totals) return true;
    if (this.packed) {
      for (const [frames, start, end, modelIds] of this.packed) addPackedTotals(this.totals, frames, start, end, modelIds);
      this.packed = undefined;
    }
    for (const [modelId, sums] of this.totals.models) if (sums.exact(EVENTS) === 0) this.totals.models.delete(modelId);
    return this.totals.models.size > 0;
  }
}

export class DaySums {
  private readonly byMember = new Map<number, Map<number, DaySum>>();
  /** How many (member, day) sums are held. */
  size = 0;

  /**
   * Adds one event (positional: no object per event on an import's hot path), or with `events` -1 and
   * the values negated takes one away: one summed elsewhere that the store turned out to hold already.
   */
  add(memberKey: number, modelId: number, day: number, inputTokens: EventValue, outputTokens: EventValue,
    basicMicros: EventValue, payGoMicros: EventValue, events = 1): void {
    const sum = this.sumOf(memberKey, day);
    (sum.totals ??= new TotalsByModel()).addEvent(modelId, inputTokens, outputTokens, basicMicros, payGoMicros, events);
  }

  /**
   * Adds packed totals (see usage-sums-codec.ts) to a (member, day), or with `sign` -1 takes them away.
   * `modelIds` maps their model numbers to model ids. Added ones are kept as they are, not copied.
   */
  addPacked(memberKey: number, day: number, packed: Uint8Array, start: number, end: number, modelIds: ArrayLike<number>, sign: 1 | -1 = 1): void {
    const sum = this.sumOf(memberKey, day);
    if (sign === 1) sum.addPacked(packed, start, end, modelIds);
    else addPackedTotals((sum.totals ??= new TotalsByModel()), packed, start, end, modelIds, -1);
  }

  /**
   * The held sums in the running totals' key order (member, then day), leaving this empty. A model
   * whose events were all taken away again (`add` with events -1) is left out, and so is a day left with none.
   */
  drain(): Array<[memberKey: number, days: MemberDays]> {
    const out: Array<[number, MemberDays]> = [];
    for (const [memberKey, byDay] of [...this.byMember.entries()].sort((a, b) => a[0] - b[0])) {
      const days: MemberDays = [];
      for (const [day, sum] of [...byDay.entries()].sort((a, b) => a[0] - b[0])) if (sum.prune()) days.push([day, sum]);
      if (days.length > 0) out.push([memberKey, days]);
    }
    this.byMember.clear();
    this.size = 0;
    return out;
  }

  private sumOf(memberKey: number, day: number): DaySum {
    let days = this.byMember.get(memberKey);
    if (!days) this.byMember.set(memberKey, (days = new Map()));
    let sum = days.get(day);
    if (!sum) {
      days.set(day, (sum = new DaySum()));
      this.size++;
    }
    return sum;
  }
}

/**
 * Sums events per (member, day, model) for another thread, in typed arrays: no object per sum, so
 * holding hundreds of thousands costs the garbage collector nothing (as objects, on the import's
 * parsing thread, a 10-million-event import profiled 19 s summing, 10 s packing and 12 s of garbage
 * collection against 3 s before, and the thread fell behind the writing one). Members and models are
 * numbers of the caller's own (an import's file indexes); values are numbers (at most 10^12 an
 * event), kept exact: a sum that would pass 2^53 moves into a bigint.
 */
export class DaySumFrames {
  /** (member, day) → its first entry; entries of a (member, day) are chained by `next`. */
  private readonly firstEntry = new Map<number, number>();
  /** Per (member, day) held, in the order first seen: member, day and first entry. */
  private slots = new Int32Array(3 * 1024);
  private slotCount = 0;
  /**
   * Per member: the day of its latest event and that (member, day)'s first entry (-1 for none). A
   * file in time order has each member's events of a day together, so most events skip the Map.
   */
  private lastDay = new Int32Array(1024).fill(-1);
  private lastFirst = new Int32Array(1024);
  private readonly entries = new SumEntries();
  /** The bytes of the last frames taken. */
  private lastFramesBytes = 0;

  /** How many (member, day) sums are held. */
  get size(): number {
    return this.slotCount;
  }

  add(member: number, model: number, day: number, inputTokens: number, outputTokens: number, basicMicros: number, payGoMicros: number): void {
    let entry = member < this.lastDay.length && this.lastDay[member] === day ? this.lastFirst[member]! : this.firstOf(member, day);
    const entries = this.entries;
    let last = -1;
    while (entry !== -1 && entries.model[entry] !== model) entry = entries.next[(last = entry)]!;
    if (entry === -1) {
      entry = entries.add(model, -1);
      if (last === -1) this.newSlot(member, day, entry);
      else entries.next[last] = entry;
    }
    entries.addTo(entry, 0, inputTokens);
    entries.addTo(entry, 1, outputTokens);
    entries.addTo(entry, 2, basicMicros);
    entries.addTo(entry, 3, payGoMicros);
    entries.addTo(entry, EVENTS, 1);
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
    if (member >= this.lastDay.length) {
      this.lastDay = grown(this.lastDay, member + 1, -1);
      this.lastFirst = grown(this.lastFirst, member + 1);
    }
    this.lastDay[member] = day;
    this.lastFirst[member] = entry;
  }

  /**
   * The held sums as frames (see FRAMES below), leaving this empty: a day's sums for each (member,
   * day), or with `running`, for a member whose events have come in day order, its running totals
   * through that day instead. One buffer, cheap to transfer. Throws SumLimitError for a sum past 2^64 - 1.
   */
  takeFrames(running?: FileRunningTotals): Uint8Array {
    // Room for the day sums, or about as much as the last frames took (running totals take more); grown as needed.
    const entries = this.entries;
    let out = new Uint8Array(Math.max(this.slotCount * HEADER_ROOM + entries.count * MAX_ENTRY_BYTES, this.lastFramesBytes + (this.lastFramesBytes >> 3)));
    let at = 0;
    for (let slot = 0; slot < this.slotCount; slot++) {
      const member = this.slots[3 * slot]!;
      const day = this.slots[3 * slot + 1]!;
      const first = this.slots[3 * slot + 2]!;
      const cumulative = running?.inDayOrder(member) ?? false;
      let models = 0;
      for (let entry = first; entry !== -1; entry = entries.next[entry]!) {
        if (cumulative) running!.add(member, entries, entry);
        models++;
      }
      if (cumulative) models = running!.modelsOf(member);
      const room = at + HEADER_ROOM + models * MAX_ENTRY_BYTES;
      if (room > out.length) out = grown(out, room);
      // The totals first, after room for the header: their length is part of it.
      const start = at + HEADER_ROOM;
      const end = cumulative ? running!.pack(member, out, start) : this.packSlot(first, out, start);
      const headerEnd = writeVarint(out, writeVarint(out, writeVarint(out, at, 2 * member + (cumulative ? 1 : 0)), day), end - start);
      out.copyWithin(headerEnd, start, end);
      at = headerEnd + (end - start);
    }
    this.firstEntry.clear();
    this.slotCount = 0;
    this.lastDay.fill(-1);
    entries.clear();
    this.lastFramesBytes = at;
    return out.subarray(0, at); // not a copy: the buffer is transferred whole
  }

  /** Writes the packed sums of a slot's entries into `out` from `at`; returns the offset after them. */
  private packSlot(first: number, out: Uint8Array, at: number): number {
    for (let entry = first; entry !== -1; entry = this.entries.next[entry]!) at = this.entries.write(out, at, entry);
    return at;
  }
}

/**
 * Per member (an import's file index): its running totals over the file so far, for a member whose
 * events come in day order (a file in time order), sent ready to store: making them on the writing
 * thread made a 10-million-event import about 14% slower. Fed by takeFrames one (member, day) at a
 * time; a member with an event on a day before an earlier one's is out of day order for good, and
 * its frames are day sums from then on.
 */
export class FileRunningTotals {
  /** Per member: the latest day of its events so far (-1 for none), and whether one came before it. */
  private latestDay = new Int32Array(1024).fill(-1);
  private outOfOrder = new Uint8Array(1024);
  /** Per member: its first entry (-1 for none) and how many it has (one a model). */
  private firstEntry = new Int32Array(1024).fill(-1);
  private modelCount = new Int32Array(1024);
  private readonly entries = new SumEntries();

  /** Notes each event's member and day, in the file's order. */
  see(member: number, day: number): void {
    if (member >= this.latestDay.length) this.grow(member);
    if (day < this.latestDay[member]!) this.outOfOrder[member] = 1;
    else this.latestDay[member] = day;
  }

  /** Whether every event of the member seen so far came in day order. */
  inDayOrder(member: number): boolean {
    return member >= this.outOfOrder.length || this.outOfOrder[member] === 0;
  }

  /** How many models the member's running totals hold. */
  modelsOf(member: number): number {
    return member < this.modelCount.length ? this.modelCount[member]! : 0;
  }

  /** Adds an entry of day sums (a model's) to the member's running totals. */
  add(member: number, from: SumEntries, fromEntry: number): void {
    if (member >= this.latestDay.length) this.grow(member);
    const entries = this.entries;
    const model = from.model[fromEntry]!;
    let entry = this.firstEntry[member]!;
    while (entry !== -1 && entries.model[entry] !== model) entry = entries.next[entry]!;
    if (entry === -1) {
      // Chained at the head: the order of a row's models is free.
      this.firstEntry[member] = entry = entries.add(model, this.firstEntry[member]!);
      this.modelCount[member]!++;
    }
    entries.addEntry(entry, from, fromEntry);
  }

  /** Writes the member's running totals, packed, into `out` from `at`; returns the offset after them. */
  pack(member: number, out: Uint8Array, at: number): number {
    for (let entry = this.firstEntry[member]!; entry !== -1; entry = this.entries.next[entry]!) at = this.entries.write(out, at, entry);
    return at;
  }

  private grow(member: number): void {
    this.latestDay = grown(this.latestDay, member + 1, -1);
    this.outOfOrder = grown(this.outOfOrder, member + 1);
    this.firstEntry = grown(this.firstEntry, member + 1, -1);
    this.modelCount = grown(this.modelCount, member + 1);
  }
}

/**
 * FRAMES. What takeFrames sends: per (member, day), varint `2 * member + kind`, varint day, varint
 * length, then packed totals (see usage-sums-codec.ts) by the sender's member and model numbers. Kind 0:
 * the sums of the member's events of that day sent since the last frames; kind 1: the member's
 * running totals over the file's events through that day (FileRunningTotals).
 */
export function forEachFrame(frames: Uint8Array,
  visit: (member: number, running: boolean, day: number, start: number, end: number) => void): void {
  const reader = new VarintReader(frames);
  while (reader.at < frames.length) {
    const memberAndKind = reader.next();
    const day = reader.next();
    const length = reader.next();
    const start = reader.at;
    visit(Math.floor(memberAndKind / 2), memberAndKind % 2 === 1, day, start, start + length);
    reader.at = start + length;
  }
}

/**
 * Entries of SUMS sums each, in typed arrays (no object per entry: hundreds of thousands held cost
 * the garbage collector nothing), each with a model number and the next entry of its chain (-1 ends
 * it). Sums stay exact: past 2^53 a sum's excess moves into a bigint (rare).
 */
class SumEntries {
  count = 0;
  model = new Int32Array(1024);
  next = new Int32Array(1024);
  sums = new Float64Array(1024 * SUMS);
  /** The parts of sums past 2^53, by entry. */
  private readonly big = new Map<number, bigint[]>();

  /** A new entry of zero sums for `model`, chained before `next`. */
  add(model: number, next: number): number {
    const entry = this.count++;
    if (entry === this.model.length) {
      this.model = grown(this.model);
      this.next = grown(this.next);
      this.sums = grown(this.sums);
    }
    this.model[entry] = model;
    this.next[entry] = next;
    for (let at = entry * SUMS; at < entry * SUMS + SUMS; at++) this.sums[at] = 0;
    return entry;
  }

  /** Adds `value` to the entry's sum `i`. */
  addTo(entry: number, i: number, value: number): void {
    const at = entry * SUMS + i;
    const sum = this.sums[at]! + value;
    if (sum <= Number.MAX_SAFE_INTEGER) {
      this.sums[at] = sum;
      return;
    }
    this.bigParts(entry)[i]! += BigInt(this.sums[at]!) + BigInt(value);
    this.sums[at] = 0;
  }

  /** Adds the sums of another's entry to the entry's. */
  addEntry(entry: number, from: SumEntries, fromEntry: number): void {
    for (let i = 0; i < SUMS; i++) this.addTo(entry, i, from.sums[fromEntry * SUMS + i]!);
    const big = from.bigOf(fromEntry);
    if (!big) return;
    const parts = this.bigParts(entry);
    for (let i = 0; i < SUMS; i++) parts[i]! += big[i]!;
  }

  /** Writes the entry (its model number, then its sums) as varints; throws SumLimitError past 2^64 - 1. */
  write(out: Uint8Array, at: number, entry: number): number {
    at = writeVarint(out, at, this.model[entry]!);
    const big = this.bigOf(entry);
    for (let i = 0; i < SUMS; i++) {
      const value = this.sums[entry * SUMS + i]!;
      if (!big) {
        at = writeVarint(out, at, value);
        continue;
      }
      const total = big[i]! + BigInt(value);
      if (total > SUM_LIMIT) throw new SumLimitError();
      at = writeBigVarint(out, at, total);
    }
    return at;
  }

  clear(): void {
    this.count = 0;
    this.big.clear();
  }

  /** The entry's parts past 2^53, if any (looked up only once there are any: a Map lookup per entry cost the worker seconds). */
  private bigOf(entry: number): bigint[] | undefined {
    return this.big.size === 0 ? undefined : this.big.get(entry);
  }

  private bigParts(entry: number): bigint[] {
    let parts = this.big.get(entry);
    if (!parts) this.big.set(entry, (parts = [0n, 0n, 0n, 0n, 0n]));
    return parts;
  }
}

/** Days a member's slot key spans: past the last day of year 9999 (the latest timestamp an event may have). */
const DAY_SPAN = 2 ** 22;
/** A frame header's room: three varints below 2^32. */
const HEADER_ROOM = 15;

