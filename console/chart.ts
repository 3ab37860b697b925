// Time-series charts with uPlot: x in Unix seconds shown in the chosen time zone, one line per series.
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { h } from "./dom.js";

export interface Series {
  label: string;
  values: (number | null)[];
}

const COLORS = ["#2f6fdb", "#d9822b", "#2e9e5b", "#b0417f", "#7a5cc7", "#8c6d1f", "#1f8c8c", "#c23b3b"];

/** Draws the chart into a new element once it is in the page; resizes with its container. */
export function timeChart(times: number[], series: Series[], options: { timeZone: string; title: string; yLabel: string; bars?: boolean; onDrawn?: () => void }): HTMLElement {
  const container = h("div", { class: "chart", role: "img", "aria-label": options.title });
  const draw = () => {
    const width = Math.max(320, container.clientWidth);
    const plot = new uPlot({
      title: options.title,
      width,
      height: 280,
      tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), options.timeZone),
      series: [{}, ...series.map((s, i) => ({
        label: s.label,
        stroke: COLORS[i % COLORS.length],
        width: 2,
        points: { show: times.length <= 62 },
        ...(options.bars ? { paths: uPlot.paths.bars!({ size: [0.7, 40] }), fill: `${COLORS[i % COLORS.length]}55` } : {}),
      }))],
      axes: [{}, { label: options.yLabel, size: 70 }],
      scales: { x: { time: true } },
    }, [times, ...series.map((s) => s.values)], container);
    const resize = new ResizeObserver(() => {
      if (!container.isConnected) {
        resize.disconnect();
        plot.destroy();
        return;
      }
      plot.setSize({ width: Math.max(320, container.clientWidth), height: 280 });
    });
    resize.observe(container);
    container.dataset.drawn = "true";
    options.onDrawn?.();
  };
  // Measured after it is attached: uPlot needs the width.
  requestAnimationFrame(draw);
  return container;
}
