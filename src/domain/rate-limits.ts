// Rate limits, held in memory by each server instance: business calls per app once the caller is known,
// and the token exchange per client address (every exchange) and per app_id (failed exchanges only, so
// an app's own successful exchanges never spend the budget that slows guessing its secret). Over a
// limit the caller gets 64290 (HTTP 429, RPC resource_exhausted) with Retry-After in seconds.
import { performance } from "node:perf_hooks";
import { AppError, ErrorCode } from "./errors.js";
import { TokenBuckets } from "./token-buckets.js";

export interface RateLimitSettings {
  /** Business calls a second per app (tokens of `token create` count per enterprise); 0 turns it off. */
  callsPerSecond: number;
  /** Calls an idle app may make at once; 0 turns the call limit off. */
  callBurst: number;
  /** Failed token exchanges a minute (and at once) per app_id; 0 turns it off. */
  exchangesPerMinutePerAppId: number;
  /** Token exchanges a minute (and at once) per client address; 0 turns it off. */
  exchangesPerMinutePerAddress: number;
}

export const DEFAULT_RATE_LIMITS: Readonly<RateLimitSettings> = Object.freeze({
  callsPerSecond: 100,
  callBurst: 200,
  exchangesPerMinutePerAppId: 10,
  exchangesPerMinutePerAddress: 30,
});

/** Whom a business call counts against: the app, or the enterprise for an app-less token. */
export interface Caller {
  enterpriseId: string;
  appId: string | null;
}

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
  admitCall(caller: Caller): void {
    const { callsPerSecond, callBurst } = this.settings;
    const [key, whose] = caller.appId === null
      ? [`enterprise:${caller.enterpriseId}`, "for this enterprise's tokens made by `token create`"]
      : [`app:${caller.appId}`, "for this app"];
    admit(this.calls, key, `more than ${count(callsPerSecond, "call")} a second (burst ${callBurst}) ${whose}`);
  }

  /**
   * Runs one token exchange: counted against the caller's address, and against the app_id unless it
   * succeeds. The app_id's token is taken before the secret is checked and given back after a success,
   * so guesses running at once are held to the limit too.
   */
  async exchange<T>(appId: string, clientAddress: string | undefined, exchange: () => Promise<T>): Promise<T> {
    const { exchangesPerMinutePerAddress: perAddress, exchangesPerMinutePerAppId: perAppId } = this.settings;
    admit(this.exchangesByAddress, clientAddress ?? "unknown", `more than ${count(perAddress, "token request")} a minute from this address`);
    admit(this.exchangesByAppId, appId, `more than ${count(perAppId, "failed token request")} a minute for this app_id`);
    let failed = false;
    try {
      return await exchange();
    } catch (error) {
      failed = error instanceof AppError && error.code === ErrorCode.INVALID_APP_CREDENTIALS;
      throw error;
    } finally {
      if (!failed) this.exchangesByAppId?.giveBack(appId, performance.now());
    }
  }
}

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? "" : "s"}`;

function admit(buckets: TokenBuckets | undefined, key: string, what: string): void {
  const wait = buckets?.take(key, performance.now()) ?? 0;
  if (wait === 0) return;
  const retryAfter = Math.max(1, Math.ceil(wait));
  throw new AppError(ErrorCode.RATE_LIMITED, `rate limited: ${what}; retry after ${retryAfter} s`, { "retry-after": String(retryAfter) });
}
