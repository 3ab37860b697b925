import { describe, expect, it } from "vitest";
import { loadServeConfig } from "../../src/config.js";
import { TokenBuckets } from "../../src/domain/token-buckets.js";

describe("token buckets", () => {
  it("a key spends its burst at once, then waits 1/rate seconds for each further call", () => {
    const buckets = new TokenBuckets(2, 3);
    expect([0, 0, 0].map(() => buckets.take("a", 1000))).toStrictEqual([0, 0, 0]);
    expect(buckets.take("a", 1000)).toBe(0.5);
    expect(buckets.take("a", 1250)).toBe(0.25);
    expect(buckets.take("a", 1500)).toBe(0);
    expect(buckets.take("b", 1500)).toBe(0);
  });

  it("never holds more than maxBuckets keys, and a flood of made-up keys does not reset one still refilling", () => {
    const buckets = new TokenBuckets(1, 2, 100);
    expect([0, 0, 0].map(() => buckets.take("victim", 0))).toStrictEqual([0, 0, 1]);
    for (let i = 0; i < 10_000; i++) buckets.take(`random-${i}`, 0);
    expect(buckets.size).toBe(100);
    expect(buckets.take("victim", 0)).toBe(1);
  });

  it("makes room by dropping a full bucket, even when one still refilling was used less recently", () => {
    const buckets = new TokenBuckets(1, 2, 3);
    buckets.take("victim", 0);
    buckets.take("victim", 0);
    buckets.take("x", 0);
    buckets.take("y", 0);
    buckets.take("z", 1000); // x and y are full again at 1000, the victim holds 1 token
    expect(buckets.size).toBe(3);
    expect([buckets.take("victim", 1000), buckets.take("victim", 1000)]).toStrictEqual([0, 1]);
  });

  it("when every bucket is still refilling, drops the one closest to full", () => {
    const buckets = new TokenBuckets(1, 3, 2);
    for (let i = 0; i < 3; i++) buckets.take("victim", 0);
    buckets.take("other", 0);
    buckets.take("new", 0);
    expect(buckets.size).toBe(2);
    expect(buckets.take("victim", 0)).toBe(1);
  });

  it("a token given back can be spent again, up to the burst", () => {
    const buckets = new TokenBuckets(1, 1);
    expect(buckets.take("a", 0)).toBe(0);
    buckets.giveBack("a", 0);
    buckets.giveBack("a", 0);
    expect([buckets.take("a", 0), buckets.take("a", 0)]).toStrictEqual([0, 1]);
  });
});

describe("rate limit settings", () => {
  it("default to 100 calls a second, burst 200, and 10 and 30 token exchanges a minute", () => {
    expect(loadServeConfig({}, {}).rateLimits).toStrictEqual({ callsPerSecond: 100, callBurst: 200, exchangesPerMinutePerAppId: 10, exchangesPerMinutePerAddress: 30 });
  });

  it("are read from the environment, 0 included", () => {
    const env = { RATE_LIMIT_RPS: "0.5", RATE_LIMIT_BURST: "0", TOKEN_EXCHANGE_LIMIT_PER_APP_ID: "3", TOKEN_EXCHANGE_LIMIT_PER_ADDRESS: "0" };
    expect(loadServeConfig({}, env).rateLimits).toStrictEqual({ callsPerSecond: 0.5, callBurst: 0, exchangesPerMinutePerAppId: 3, exchangesPerMinutePerAddress: 0 });
  });

  it("refuse a negative or non-numeric value, naming the variable", () => {
    expect(() => loadServeConfig({}, { RATE_LIMIT_RPS: "-1" })).toThrow('RATE_LIMIT_RPS: "-1" is not a number >= 0 (0 turns the limit off)');
    expect(() => loadServeConfig({}, { RATE_LIMIT_BURST: "1.5" })).toThrow('RATE_LIMIT_BURST: "1.5" is not a whole number >= 0');
    expect(() => loadServeConfig({}, { TOKEN_EXCHANGE_LIMIT_PER_ADDRESS: "lots" })).toThrow("TOKEN_EXCHANGE_LIMIT_PER_ADDRESS");
  });
});
