import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { DaySumFrames, DaySums, FileRunningTotals, forEachFrame } from "../../src/storage/usage-day-sums.js";
import { addPackedTotals } from "../../src/storage/usage-sums-codec.js";
import { SumLimitError, TotalsByModel } from "../../src/domain/usage-totals.js";
import { packedOf } from "../helpers/packed-totals.js";

/** Totals as plain bigints: model id → [input, output, basic, pay-go, events]. */
const plainTotals = (totals: TotalsByModel) => Object.fromEntries([...totals.models].sort((a, b) => a[0] - b[0]).map(([id, s]) => [id, [0, 1, 2, 3, 4].map((i) => s.total(i))]));

/** Held sums as plain bigints: member key → day → model id → [input, output, basic, pay-go, events]. */
const plain = (sums: DaySums) => Object.fromEntries(sums.drain().map(([member, days]) => [member, Object.fromEntries(days.map(([day, sum]) => {
  const totals = new TotalsByModel();
  sum.addTo(totals);
  return [day, plainTotals(totals)];
}))]));

/** Adds frames of day sums to `sums`, their numbers mapped as an import maps them; a frame of running totals fails the test. */
function receive(sums: DaySums, frames: Uint8Array, memberKeys: number[], modelIds: number[]): void {
  forEachFrame(frames, (member, running, day, start, end) => {
    expect(running).toBe(false);
    sums.addPacked(memberKeys[member]!, day, frames, start, end, modelIds);
  });
}

/** Packed totals as plain bigints (see plainTotals). */
function plainPacked(packed: Uint8Array, start = 0, end = packed.length) {
  const totals = new TotalsByModel();
  addPackedTotals(totals, packed, start, end);
  return plainTotals(totals);
}

describe("day sums across threads", () => {
  it("frames carry every (member, day, model) sum exactly, numbered by the sender and mapped by the receiver", () => {
    // Members and models are the sender's numbers; the receiver maps them to keys and ids of its own.
    const memberKeys = [101, 7, 55];
    const modelIds = [3, 9, 4, 12];
    const value = fc.integer({ min: 0, max: 1_000_000_000_000 });
    const event = fc.tuple(fc.nat(2), fc.nat(3), fc.integer({ min: 19_000, max: 19_010 }), value, value, value, value);
    fc.assert(fc.property(fc.array(event, { maxLength: 60 }), fc.integer({ min: 1, max: 20 }), (events, perMessage) => {
      const sender = new DaySumFrames();
      const receiver = new DaySums();
      const reference = new DaySums();
      for (const [member, model, day, ...v] of events) {
        sender.add(member, model, day, v[0]!, v[1]!, v[2]!, v[3]!);
        reference.add(memberKeys[member]!, modelIds[model]!, day, v[0]!, v[1]!, v[2]!, v[3]!);
        if (sender.size >= perMessage) receive(receiver, sender.takeFrames(), memberKeys, modelIds);
      }
      receive(receiver, sender.takeFrames(), memberKeys, modelIds);
      expect(sender.size).toBe(0);
      expect(plain(receiver)).toStrictEqual(plain(reference));
    }), { numRuns: 300 });
  });

  it("keeps a sum past 2^53 exact, and refuses one past 2^64 - 1", () => {
    const sender = new DaySumFrames();
    for (let i = 0; i < 10_000; i++) sender.add(0, 0, 20_000, 1_000_000_000_000, 1, 0, 999_999_999_999);
    const receiver = new DaySums();
    receive(receiver, sender.takeFrames(), [1], [2]);
    expect(plain(receiver)).toStrictEqual({ 1: { 20000: { 2: [10n ** 16n, 10_000n, 0n, 9_999_999_999_990_000n, 10_000n] } } });

    // 2^64 - 1 = 2048 * (2^53 - 1) + 2047: events of the largest exact number reach the limit in
    // 2,049 additions (at the per-event ceiling of 10^12 it takes 18.5 million of them).
    const atLimit = new DaySumFrames();
    for (let i = 0; i < 2048; i++) atLimit.add(0, 0, 20_000, Number.MAX_SAFE_INTEGER, 0, 0, 0);
    atLimit.add(0, 0, 20_000, 2047, 0, 0, 0);
    const limitReceiver = new DaySums();
    receive(limitReceiver, atLimit.takeFrames(), [1], [2]);
    expect(plain(limitReceiver)).toStrictEqual({ 1: { 20000: { 2: [2n ** 64n - 1n, 0n, 0n, 0n, 2049n] } } });

    const past = new DaySumFrames();
    for (let i = 0; i < 2048; i++) past.add(0, 0, 20_000, Number.MAX_SAFE_INTEGER, 0, 0, 0);
    past.add(0, 0, 20_000, 2048, 0, 0, 0);
    expect(() => past.takeFrames()).toThrow(SumLimitError);
  });

  it("takes repeats away from sums that came as frames", () => {
    const sender = new DaySumFrames();
    sender.add(0, 0, 20_000, 10, 5, 0, 0);
    sender.add(0, 1, 20_000, 4, 4, 0, 0);
    sender.add(0, 1, 20_001, 4, 4, 0, 0);
    const sums = new DaySums();
    receive(sums, sender.takeFrames(), [1], [2, 3]);
    sums.add(1, 3, 20_000, -4, -4, 0, 0, -1);
    sums.add(1, 3, 20_001, -4, -4, 0, 0, -1);
    expect(plain(sums)).toStrictEqual({ 1: { 20000: { 2: [10n, 5n, 0n, 0n, 1n] } } });
  });

  it("takes repeats away again; a model or day left with no events is not written", () => {
    const sums = new DaySums();
    sums.add(1, 2, 20_000, 10, 5, 0, 0);
    sums.add(1, 3, 20_000, 4, 4, 0, 0);
    sums.add(1, 3, 20_001, 4, 4, 0, 0);
    sums.add(1, 3, 20_000, -4, -4, 0, 0, -1);
    sums.add(1, 3, 20_001, -4, -4, 0, 0, -1);
    expect(plain(sums)).toStrictEqual({ 1: { 20000: { 2: [10n, 5n, 0n, 0n, 1n] } } });
  });

  it("takes packed sums away again, and leaves out a model with no events left", () => {
    // Model numbers 0 and 1, mapped to ids 2 and 3.
    const later = new TotalsByModel();
    later.addEvent(0, 10, 5, 0, 0);
    later.addEvent(1, 4, 4, 0, 0);
    const earlier = new TotalsByModel();
    earlier.addEvent(1, 4, 4, 0, 0);
    const [laterPacked, earlierPacked] = [packedOf(later), packedOf(earlier)];
    const sums = new DaySums();
    sums.addPacked(1, 20_000, laterPacked, 0, laterPacked.length, [2, 3]);
    sums.addPacked(1, 20_000, earlierPacked, 0, earlierPacked.length, [2, 3], -1);
    sums.addPacked(1, 20_001, earlierPacked, 0, earlierPacked.length, [2, 3]);
    sums.addPacked(1, 20_001, earlierPacked, 0, earlierPacked.length, [2, 3], -1);
    expect(plain(sums)).toStrictEqual({ 1: { 20000: { 2: [10n, 5n, 0n, 0n, 1n] } } });
  });
});

describe("running totals across threads", () => {
  const value = fc.integer({ min: 0, max: 1_000_000_000_000 });
  const event = fc.tuple(fc.nat(3), fc.nat(3), fc.integer({ min: 19_000, max: 19_006 }), value, value, value, value);
  type Event = [member: number, model: number, day: number, ...values: number[]];

  /** The sums of `events` of `member` on days up to `day` (or on `day` only), as plainPacked gives them. */
  function expected(events: Event[], member: number, day: number, onlyThatDay: boolean) {
    const totals = new TotalsByModel();
    for (const [m, model, d, ...v] of events) {
      if (m === member && (onlyThatDay ? d === day : d <= day)) totals.addEvent(model, v[0]!, v[1]!, v[2]!, v[3]!);
    }
    return plainTotals(totals);
  }

  it("sends a member's running totals through each day while its events come in day order, else its day sums", () => {
    fc.assert(fc.property(fc.array(event, { maxLength: 60 }), fc.boolean(), fc.integer({ min: 1, max: 12 }), (generated, sorted, perMessage) => {
      const events = (sorted ? [...generated].sort((a, b) => a[2] - b[2]) : generated) as Event[];
      const sender = new DaySumFrames();
      const running = new FileRunningTotals();
      const seen: Event[] = [];
      let sincePrevious: Event[] = [];
      const check = () => {
        const frames = sender.takeFrames(running);
        const got: unknown[] = [];
        forEachFrame(frames, (member, isRunning, day, start, end) => got.push([member, isRunning, day, plainPacked(frames, start, end)]));
        // One frame per (member, day) of the events since the last frames, in the order first seen.
        const slots = [...new Map(sincePrevious.map(([member, , day]) => [`${member}:${day}`, [member, day] as const])).values()];
        const inOrder = (member: number) => seen.filter((e) => e[0] === member).every((e, i, all) => i === 0 || e[2] >= all[i - 1]![2]);
        expect(got).toStrictEqual(slots.map(([member, day]) => inOrder(member)
          ? [member, true, day, expected(seen, member, day, false)]
          : [member, false, day, expected(sincePrevious, member, day, true)]));
        sincePrevious = [];
      };
      for (const e of events) {
        const [member, model, day, ...v] = e;
        sender.add(member, model, day, v[0]!, v[1]!, v[2]!, v[3]!);
        running.see(member, day);
        seen.push(e);
        sincePrevious.push(e);
        if (sender.size >= perMessage) check();
      }
      check();
      if (sorted) expect(events.every((e) => running.inDayOrder(e[0]))).toBe(true);
    }), { numRuns: 300 });
  });

  it("keeps each member's running totals as its numbers grow past the arrays' first sizes", () => {
    const sender = new DaySumFrames();
    const running = new FileRunningTotals();
    const members = [0, 3_000, 70_000, 1_500];
    for (let day = 20_000; day < 20_003; day++) {
      members.forEach((member, i) => {
        sender.add(member, i, day, 10 + i, 1, 0, 0);
        running.see(member, day);
      });
      const frames = sender.takeFrames(running);
      const got: unknown[] = [];
      forEachFrame(frames, (member, isRunning, frameDay, start, end) => got.push([member, isRunning, frameDay, plainPacked(frames, start, end)]));
      const through = BigInt(day - 20_000 + 1);
      expect(got).toStrictEqual(members.map((member, i) => [member, true, day, { [i]: [through * BigInt(10 + i), through, 0n, 0n, through] }]));
    }
  });

  it("keeps running totals past 2^53 exact, and refuses one past 2^64 - 1", () => {
    const sender = new DaySumFrames();
    const running = new FileRunningTotals();
    for (let day = 20_000; day < 20_010; day++) {
      for (let i = 0; i < 1_000; i++) {
        sender.add(0, 0, day, 1_000_000_000_000, 1, 0, 0);
        running.see(0, day);
      }
    }
    const frames = sender.takeFrames(running);
    const days: Array<[number, unknown]> = [];
    forEachFrame(frames, (_, isRunning, day, start, end) => days.push([day, isRunning && plainPacked(frames, start, end)]));
    expect(days.at(-1)).toStrictEqual([20_009, { 0: [10n ** 16n, 10_000n, 0n, 0n, 10_000n] }]);

    // 2^64 - 1 = 2048 * (2^53 - 1) + 2047 (see above), reached over several messages: each day's own
    // sum stays far below it, the running total reaches it exactly, and one more passes it.
    const huge = new DaySumFrames();
    const hugeRunning = new FileRunningTotals();
    const day = (d: number, count: number, value: number) => {
      for (let i = 0; i < count; i++) huge.add(0, 0, 20_000 + d, value, 0, 0, 0);
      hugeRunning.see(0, 20_000 + d);
      return huge.takeFrames(hugeRunning);
    };
    for (let d = 0; d < 4; d++) day(d, 512, Number.MAX_SAFE_INTEGER);
    const atLimit = day(4, 1, 2047);
    const last: unknown[] = [];
    forEachFrame(atLimit, (_, isRunning, d, start, end) => last.push([d, isRunning && plainPacked(atLimit, start, end)]));
    expect(last).toStrictEqual([[20_004, { 0: [2n ** 64n - 1n, 0n, 0n, 0n, 2049n] }]]);
    expect(() => day(5, 1, 1)).toThrow(SumLimitError);
  });
});
