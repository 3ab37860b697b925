import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { DEFAULT_RATE_LIMITS } from "../../src/interceptors/rate-limit.js";
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

  it("never holds more than maxBuckets keys: the least recently used one goes, and comes back full", () => {
    const buckets = new TokenBuckets(1, 1, 100);
    expect(buckets.take("victim", 0)).toBe(0);
    expect(buckets.take("victim", 0)).toBe(1);
    for (let i = 0; i < 10_000; i++) buckets.take(`random-${i}`, 0);
    expect(buckets.size).toBe(100);
    expect(buckets.take("victim", 0)).toBe(0);
  });
});

describe("rate limit settings", () => {
  it("default to 100 calls a second, burst 200, and 10 and 30 token exchanges a minute", () => {
    expect(loadConfig({}, {}).rateLimits).toStrictEqual({ callsPerSecond: 100, callBurst: 200, exchangesPerMinutePerAppId: 10, exchangesPerMinutePerAddress: 30 });
    expect(DEFAULT_RATE_LIMITS).toStrictEqual(loadConfig({}, {}).rateLimits);
  });

  it("are read from the environment, 0 included", () => {
    const env = { RATE_LIMIT_RPS: "0.5", RATE_LIMIT_BURST: "0", TOKEN_EXCHANGE_LIMIT_PER_APP_ID: "3", TOKEN_EXCHANGE_LIMIT_PER_ADDRESS: "0" };
    expect(loadConfig({}, env).rateLimits).toStrictEqual({ callsPerSecond: 0.5, callBurst: 0, exchangesPerMinutePerAppId: 3, exchangesPerMinutePerAddress: 0 });
  });

  it("refuse a negative or non-numeric value, naming the variable", () => {
    expect(() => loadConfig({}, { RATE_LIMIT_RPS: "-1" })).toThrow('RATE_LIMIT_RPS: "-1" is not a number >= 0 (0 turns the limit off)');
    expect(() => loadConfig({}, { RATE_LIMIT_BURST: "1.5" })).toThrow('RATE_LIMIT_BURST: "1.5" is not a whole number >= 0');
    expect(() => loadConfig({}, { TOKEN_EXCHANGE_LIMIT_PER_ADDRESS: "lots" })).toThrow("TOKEN_EXCHANGE_LIMIT_PER_ADDRESS");
  });
});
