// The daily trend: the enterprise's events, active members, tokens and amounts per local day
// (core-metrics) or per hour (the usage report's hour buckets), the range's totals, a chart and a table.
import { timeChart, type Series } from "../chart.js";
import { localTime, midnight } from "../dates.js";
import { h } from "../dom.js";
import { plotAmount } from "../format.js";
import { windowOf } from "../range.js";
import { pagedTable } from "../table.js";
import type { CoreMetrics, Count, Figures } from "../types.js";
import { report, ZERO, type ViewContext } from "./context.js";
import { figureColumns, summary } from "./figures.js";

interface Point extends Figures {
  time: number;
  label: string;
}

const METRICS: Record<string, { label: string; series: (points: Point[]) => Series[] }> = {
  amount: { label: "Amount", series: (p) => [
    { label: "Total", values: p.map((x) => plotAmount(x.total_amount)) },
    { label: "Basic", values: p.map((x) => plotAmount(x.basic_amount)) },
    { label: "Pay-as-you-go", values: p.map((x) => plotAmount(x.pay_go_amount)) },
  ] },
  events: { label: "Events", series: (p) => [{ label: "Events", values: p.map((x) => Number(x.events)) }] },
  members: { label: "Active members", series: (p) => [{ label: "Active members", values: p.map((x) => Number(x.active_members)) }] },
  tokens: { label: "Tokens", series: (p) => [
    { label: "Input tokens", values: p.map((x) => Number(x.input_tokens as Count)) },
    { label: "Output tokens", values: p.map((x) => Number(x.output_tokens as Count)) },
  ] },
};

export async function trendView(ctx: ViewContext, root: HTMLElement): Promise<void> {
  const { range } = ctx;
  ctx.status("Loading the trend…");
  const [points, totals] = await Promise.all([
    range.granularity === "day" ? days(ctx) : hours(ctx),
    report(ctx, { bucket: "none" }),
  ]);
  const total = totals.buckets[0]?.groups[0] ?? ZERO;

  const metric = h("select", { id: "metric", "aria-label": "Metric" },
    ...Object.entries(METRICS).map(([key, m]) => h("option", { value: key }, m.label)));
  const chartSlot = h("div", { class: "chart-slot" });
  const unit = (key: string) => key === "amount" ? ctx.currency : METRICS[key]!.label.toLowerCase();
  const draw = (onDrawn?: () => void) => {
    const chosen = METRICS[metric.value]!;
    chartSlot.replaceChildren(timeChart(points.map((p) => p.time), chosen.series(points), {
      timeZone: range.timeZone, title: `${chosen.label} per ${range.granularity} (${range.timeZone})`, yLabel: unit(metric.value),
      bars: range.granularity === "day" && metric.value !== "amount", onDrawn,
    }));
  };
  metric.addEventListener("change", () => draw());

  root.append(
    h("h2", {}, `Usage ${range.from} to ${range.to}`),
    summary(total, ctx.currency, "trend-summary"),
    h("label", { class: "metric" }, "Chart ", metric),
    chartSlot,
    pagedTable(points, [
      { label: range.granularity === "day" ? "Date" : "Hour", cell: (p) => p.label },
      ...figureColumns<Point>(ctx.currency, (p) => p),
    ], range.granularity === "day" ? 31 : 24, { id: "trend-table" }),
  );
  ctx.status(`${points.length} ${range.granularity === "day" ? "days" : "hours"} in ${range.timeZone}`);
  draw(() => ctx.ready());
}

async function days(ctx: ViewContext): Promise<Point[]> {
  const { from, to, timeZone } = ctx.range;
  const metrics = await ctx.api.get<CoreMetrics>("/openapi/v1/statistics/core-metrics",
    { start_date: from, end_date: to, time_zone: timeZone }, ctx.signal);
  return metrics.items.map((item) => ({ ...item, time: midnight(item.date, timeZone), label: item.date }));
}

async function hours(ctx: ViewContext): Promise<Point[]> {
  const answer = await report(ctx, { bucket: "hour" });
  const { start_time } = windowOf(ctx.range);
  return answer.buckets.map((bucket) => ({
    ...(bucket.groups[0] ?? ZERO),
    time: Math.max(bucket.start_time, start_time),
    label: localTime(bucket.start_time, ctx.range.timeZone),
  }));
}
