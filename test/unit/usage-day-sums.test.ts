import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { DaySumFrames, DaySums, forEachFrame } from "../../src/storage/usage-day-sums.js";
import { SumLimitError, TotalsByModel } from "../../src/domain/usage-totals.js";

/** Totals as plain bigints: model id → [input, output, basic, pay-go, events]. */
const plainTotals = (totals: TotalsByModel) => Object.fromEntries([...totals.models].sort((a, b) => a[0] - b[0]).map(([id, s]) => [id, [0, 1, 2, 3, 4].map((i) => s.total(i))]));

/** Held sums as plain bigints: member key → day → model id → [input, output, basic, pay-go, events]. */
const plain = (sums: DaySums) => Object.fromEntries(sums.drain().map(([member, days]) => [member,
  Object.fromEntries(days.map(([day, sum]) => [day, plainTotals(sum.merged())]))]));

/** Adds frames of day sums to `sums`, their numbers mapped as an import maps them. */
function receive(sums: DaySums, frames: Uint8Array, memberKeys: number[], modelIds: number[]): void {
  forEachFrame(frames, (member, day, start, end) => {
    sums.addPacked(memberKeys[member]!, day, frames, start, end, modelIds);
  });
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
    sums.subtract(1, 3, 20_000, 4, 4, 0, 0);
    sums.subtract(1, 3, 20_001, 4, 4, 0, 0);
    expect(plain(sums)).toStrictEqual({ 1: { 20000: { 2: [10n, 5n, 0n, 0n, 1n] } } });
  });

  it("takes repeats away again; a model or day left with no events is not written", () => {
    const sums = new DaySums();
    sums.add(1, 2, 20_000, 10, 5, 0, 0);
    sums.add(1, 3, 20_000, 4, 4, 0, 0);
    sums.add(1, 3, 20_001, 4, 4, 0, 0);
    sums.subtract(1, 3, 20_000, 4, 4, 0, 0);
    sums.subtract(1, 3, 20_001, 4, 4, 0, 0);
    expect(plain(sums)).toStrictEqual({ 1: { 20000: { 2: [10n, 5n, 0n, 0n, 1n] } } });
  });
});
