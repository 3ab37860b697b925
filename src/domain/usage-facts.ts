// The input of the usage analytics (report, daily trend): a stream of facts, each the usage of one
// member on one model at one time. This is the seam between the report engine and the store: today
// every raw event is a fact (operations/usage-report.ts, rawEventFacts), the reference answer; a
// pre-aggregated store can feed the same engine facts that each sum many events, as long as all the
// events a fact sums fall in the bucket of its `ts` (quarter-hour sums do, for hour and day buckets
// in every zone, since every UTC offset is a whole quarter hour).
import type { EventValue } from "./usage-event.js";

export interface UsageFact {
  memberKey: number;
  modelId: number;
  /** Unix seconds: the event's time, or any time of the period a summed fact covers. */
  ts: number;
  /** The events it sums; absent means one (a raw event). */
  events?: number;
  inputTokens: EventValue;
  outputTokens: EventValue;
  basicMicros: EventValue;
  payGoMicros: EventValue;
}

/**
 * The facts of an enterprise in the window [start, end), in pages, in any order, only those of `memberKeys` when given
 * (an empty list: none). A page and its facts are valid until the next page is asked for (a source may reuse them).
 */
export type UsageFacts = (enterpriseId: string, start: number, end: number, memberKeys: readonly number[] | undefined) => AsyncIterable<readonly UsageFact[]>;
