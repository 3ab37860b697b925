// Token buckets by key, bounded in number: each key may spend `burst` calls at once and regains `rate`
// a second. A full bucket is the same as no bucket, so the least recently used ones are dropped when
// there are too many: a stream of made-up keys cannot grow memory past `maxBuckets`.

interface Bucket {
  tokens: number;
  /** When `tokens` was computed, in milliseconds. */
  at: number;
}

export const DEFAULT_MAX_BUCKETS = 10_000;

export class TokenBuckets {
  /** In least-recently-used order: a Map iterates in insertion order and each take re-inserts. */
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly ratePerSecond: number,
    private readonly burst: number,
    private readonly maxBuckets = DEFAULT_MAX_BUCKETS,
  ) {
    if (!(ratePerSecond > 0) || !(burst >= 1)) throw new Error(`token bucket needs rate > 0 and burst >= 1 (got ${ratePerSecond}, ${burst})`);
  }

  /** Takes one token from key's bucket at `nowMs`: 0 when taken, else the seconds until one is there. */
  take(key: string, nowMs: number): number {
    const bucket = this.buckets.get(key);
    let tokens = this.burst;
    if (bucket) {
      tokens = Math.min(this.burst, bucket.tokens + (Math.max(0, nowMs - bucket.at) / 1000) * this.ratePerSecond);
      this.buckets.delete(key);
    }
    const wait = tokens >= 1 ? 0 : (1 - tokens) / this.ratePerSecond;
    this.buckets.set(key, { tokens: wait === 0 ? tokens - 1 : tokens, at: nowMs });
    if (this.buckets.size > this.maxBuckets) this.buckets.delete(this.buckets.keys().next().value!);
    return wait;
  }

  /** How many keys have a bucket. */
  get size(): number {
    return this.buckets.size;
  }
}
