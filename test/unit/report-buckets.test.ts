import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { bucketParts, planBuckets, type BucketKind } from "../../src/domain/usage-window.js";
import { DAY_SECONDS } from "../../src/domain/local-time.js";

const ZONES = ["UTC", "Asia/Kathmandu", "America/New_York", "Australia/Lord_Howe"];
const KINDS: BucketKind[] = ["day", "hour", "none"];

describe("bucketParts: the raw part of a report, one bucket's part of one UTC day at a time", () => {
  it("covers the range exactly, in order, each part inside one bucket and one UTC day", () => {
    fc.assert(fc.property(fc.integer({ min: 1_600_000_000, max: 1_800_000_000 }), fc.integer({ min: 1, max: 20 * DAY_SECONDS }),
      fc.constantFrom(...ZONES), fc.constantFrom(...KINDS), fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true }),
      (start, span, zone, kind, a, b) => {
        const end = start + span;
        const buckets = planBuckets(start, end, zone, kind);
        // Any sub-range of the window, as the report's raw ranges are.
        const [x, y] = [a, b].sort((p, q) => p - q) as [number, number];
        const from = start + Math.floor(x * span);
        const to = Math.max(from + 1, start + Math.ceil(y * span));
        const parts = bucketParts(buckets, from, Math.min(to, end));
        let at = from;
        for (const part of parts) {
          expect(part.from).toBe(at);
          expect(part.to).toBeGreaterThan(part.from);
          const bucket = buckets[part.bucket]!;
          expect(part.from >= bucket.start && part.to <= bucket.end).toBe(true);
          expect(Math.floor(part.from / DAY_SECONDS)).toBe(Math.floor((part.to - 1) / DAY_SECONDS));
          at = part.to;
        }
        expect(at).toBe(Math.min(to, end));
      }), { numRuns: 300 });
  });

  it("cuts a Kathmandu day (+05:45) at the UTC midnight inside it", () => {
    const midnight = Date.parse("2025-03-10T00:00:00Z") / 1000 - (5 * 3600 + 45 * 60);
    const buckets = planBuckets(midnight, midnight + DAY_SECONDS, "Asia/Kathmandu", "day");
    expect(bucketParts(buckets, midnight, midnight + DAY_SECONDS)).toEqual([
      { bucket: 0, from: midnight, to: midnight + 5 * 3600 + 45 * 60 },
      { bucket: 0, from: midnight + 5 * 3600 + 45 * 60, to: midnight + DAY_SECONDS },
    ]);
  });
});
