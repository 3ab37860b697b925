import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { DaySumFrames, DaySums } from "../../src/domain/usage-day-sums.js";
import { SumLimitError, TotalsByModel } from "../../src/domain/usage-totals.js";

/** Held sums as plain bigints: member key → day → model id → [input, output, basic, pay-go, events]. */
const plain = (sums: DaySums) => Object.fromEntries(sums.drain().map(([member, days]) => [member, Object.fromEntries(days.map(([day, sum]) => {
  const totals = new TotalsByModel();
  sum.addTo(totals);
  return [day, Object.fromEntries([...totals.models].sort((a, b) => a[0] - b[0]).map(([id, s]) => [id, [0, 1, 2, 3, 4].map((i) => s.total(i))]))];
}))]));

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
        if (sender.size >= perMessage) receiver.addFrames(sender.takeFrames(), memberKeys, modelIds);
      }
      receiver.addFrames(sender.takeFrames(), memberKeys, modelIds);
      expect(sender.size).toBe(0);
      expect(plain(receiver)).toStrictEqual(plain(reference));
    }), { numRuns: 300 });
  });

  it("keeps a sum past 2^53 exact, and refuses one past 2^64 - 1", () => {
    const sender = new DaySumFrames();
    for (let i = 0; i < 10_000; i++) sender.add(0, 0, 20_000, 1_000_000_000_000, 1, 0, 999_999_999_999);
    const receiver = new DaySums();
    receiver.addFrames(sender.takeFrames(), [1], [2]);
    expect(plain(receiver)).toStrictEqual({ 1: { 20000: { 2: [10n ** 16n, 10_000n, 0n, 9_999_999_999_990_000n, 10_000n] } } });

    const huge = new DaySumFrames();
    // 2^64 - 1 is about 1.8 * 10^19: 18.5 million events at the per-event ceiling pass it.
    for (let i = 0; i < 18_500_000; i++) huge.add(0, 0, 20_000, 1_000_000_000_000, 0, 0, 0);
    expect(() => huge.takeFrames()).toThrow(SumLimitError);
  });

  it("takes repeats away from sums that came as frames", () => {
    const sender = new DaySumFrames();
    sender.add(0, 0, 20_000, 10, 5, 0, 0);
    sender.add(0, 1, 20_000, 4, 4, 0, 0);
    sender.add(0, 1, 20_001, 4, 4, 0, 0);
    const sums = new DaySums();
    sums.addFrames(sender.takeFrames(), [1], [2, 3]);
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
