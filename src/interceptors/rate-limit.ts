// Rate limits, held in memory by each server instance: business calls per app once the caller is known,
// and the token exchange per app_id and per client address before the app secret is checked. Over a
// limit the caller gets 64290 (HTTP 429, RPC resource_exhausted) with Retry-After in seconds.
import { performance } from "node:perf_hooks";
import { AppError, ErrorCode } from "../domain/errors.js";
import { TokenBuckets } from "../domain/token-buckets.js";
import type { Principal } from "./auth.js";

export interface RateLimitSettings {
  /** Business calls a second per app (tokens of `token create` count per enterprise); 0 turns it off. */
  callsPerSecond: number;
  /** Calls an idle app may make at once; 0 turns the call limit off. */
  callBurst: number;
  /** Token exchanges a minute (and at once) per app_id; 0 turns it off. */
  exchangesPerMinutePerAppId: number;
  /** Token exchanges a minute (and at once) per client address; 0 turns it off. */
  exchangesPerMinutePerAddress: number;
}

export const DEFAULT_RATE_LIMITS: RateLimitSettings = {
  callsPerSecond: 100,
  callBurst: 200,
  exchangesPerMinutePerAppId: 10,
  exchangesPerMinutePerAddress: 30,
};

export class RateLimits {
  private readonly calls: TokenBuckets | undefined;
  private readonly exchangesByAppId: TokenBuckets | undefined;
  private readonly exchangesByAddress: TokenBuckets | undefined;

  constructor(private readonly settings: RateLimitSettings) {
    const { callsPerSecond, callBurst, exchangesPerMinutePerAppId: perAppId, exchangesPerMinutePerAddress: perAddress } = settings;
    this.calls = callsPerSecond > 0 && callBurst > 0 ? new TokenBuckets(callsPerSecond, callBurst) : undefined;
    this.exchangesByAppId = perAppId > 0 ? new TokenBuckets(perAppId / 60, perAppId) : undefined;
    this.exchangesByAddress = perAddress > 0 ? new TokenBuckets(perAddress / 60, perAddress) : undefined;
  }

  /** Counts one business call against the caller's app (or enterprise, for an app-less token). */
  admitCall(principal: Principal): void {
    const key = principal.appId === null ? `enterprise:${principal.enterpriseId}` : `app:${principal.appId}`;
    const { callsPerSecond, callBurst } = this.settings;
    admit(this.calls, key, `more than ${callsPerSecond} calls a second (burst ${callBurst}) for this app`);
  }

  /** Counts one token exchange against the app_id asked for and the caller's address. */
  admitExchange(appId: string, clientAddress: string | undefined): void {
    admit(this.exchangesByAddress, clientAddress ?? "unknown",
      `more than ${this.settings.exchangesPerMinutePerAddress} token requests a minute from this address`);
    admit(this.exchangesByAppId, appId, `more than ${this.settings.exchangesPerMinutePerAppId} token requests a minute for this app_id`);
  }
}

function admit(buckets: TokenBuckets | undefined, key: string, what: string): void {
  const wait = buckets?.take(key, performance.now()) ?? 0;
  if (wait === 0) return;
  const retryAfter = Math.max(1, Math.ceil(wait));
  throw new AppError(ErrorCode.RATE_LIMITED, `rate limited: ${what}; retry after ${retryAfter} s`, { "retry-after": String(retryAfter) });
}
