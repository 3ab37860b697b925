// Token buckets by key, bounded in number: each key may spend `burst` calls at once and regains `rate`
// a second. A full bucket is the same as no bucket, so only full ones are dropped to make room: a stream
// of made-up keys cannot grow memory past `maxBuckets`, nor reset a key that is still refilling. When
// every bucket is still refilling, the one closest to full goes: it regains at most what it lacked, and
// to make a given bucket the closest to full every other bucket must lack more.

interface Bucket {
  tokens: number;
  /** When `tokens` was computed, in milliseconds. */
  at: number;
}

const DEFAULT_MAX_BUCKETS = 10_000;

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
    const tokens = bucket ? this.tokensAt(bucket, nowMs) : this.burst;
    if (bucket) this.buckets.delete(key);
    else if (this.buckets.size >= this.maxBuckets) this.makeRoom(nowMs);
    const wait = tokens >= 1 ? 0 : (1 - tokens) / this.ratePerSecond;
    this.buckets.set(key, { tokens: wait === 0 ? tokens - 1 : tokens, at: nowMs });
    return wait;
  }

  /** Gives back the token a call took, when that call turned out not to count. */
  giveBack(key: string, nowMs: number): void {
    const bucket = this.buckets.get(key);
    if (bucket) this.buckets.set(key, { tokens: Math.min(this.burst, this.tokensAt(bucket, nowMs) + 1), at: nowMs });
  }

  /** How many keys have a bucket. */
  get size(): number {
    return this.buckets.size;
  }

  private tokensAt(bucket: Bucket, nowMs: number): number {
    return Math.min(this.burst, bucket.tokens + (Math.max(0, nowMs - bucket.at) / 1000) * this.ratePerSecond);
  }

  /** Drops the least recently used full bucket, else the one closest to full. */
  private makeRoom(nowMs: number): void {
    let fullest: string | undefined;
    let fullestTokens = -Infinity;
    for (const [key, bucket] of this.buckets) {
      const tokens = this.tokensAt(bucket, nowMs);
      if (tokens >= this.burst) {
        fullest = key;
        break;
      }
      if (tokens > fullestTokens) [fullest, fullestTokens] = [key, tokens];
    }
    this.buckets.delete(fullest!);
  }
}
