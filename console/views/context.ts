// What every view gets: the API, the chosen range, the enterprise's currency and zone, a signal that
// aborts when the user moves on, and a status line.
import type { Api } from "../api.js";
import type { Range } from "../range.js";
import type { Figures, UsageReport, UsageReportRequest } from "../types.js";
import { windowOf } from "../range.js";

export interface ViewContext {
  api: Api;
  range: Range;
  currency: string;
  signal: AbortSignal;
  status(text: string): void;
  /** Marks the view as drawn (tests and the load-time measurement wait for it). */
  ready(): void;
}

export const ZERO: Figures = {
  events: 0, active_members: 0, input_tokens: 0, output_tokens: 0,
  basic_amount: "0.000000", pay_go_amount: "0.000000", total_amount: "0.000000",
};

/** POST /openapi/v1/statistics/usage-report over the context's range and zone. */
export function report(ctx: ViewContext, fields: Omit<UsageReportRequest, "start_time" | "end_time" | "time_zone">): Promise<UsageReport> {
  return ctx.api.post<UsageReport>("/openapi/v1/statistics/usage-report",
    { ...windowOf(ctx.range), time_zone: ctx.range.timeZone, ...fields }, ctx.signal);
}
