// The columns and summary every view shows for a set of figures.
import { h } from "../dom.js";
import { count, money } from "../format.js";
import type { Column } from "../table.js";
import type { Figures } from "../types.js";

export function figureColumns<T>(currency: string, pick: (row: T) => Figures): Column<T>[] {
  return [
    { label: "Events", numeric: true, cell: (row) => count(pick(row).events) },
    { label: "Active members", numeric: true, cell: (row) => count(pick(row).active_members) },
    { label: "Input tokens", numeric: true, cell: (row) => count(pick(row).input_tokens) },
    { label: "Output tokens", numeric: true, cell: (row) => count(pick(row).output_tokens) },
    { label: "Basic", numeric: true, cell: (row) => money(pick(row).basic_amount, currency) },
    { label: "Pay-as-you-go", numeric: true, cell: (row) => money(pick(row).pay_go_amount, currency) },
    { label: "Total", numeric: true, cell: (row) => money(pick(row).total_amount, currency) },
  ];
}

export function summary(figures: Figures, currency: string, id?: string): HTMLElement {
  const item = (label: string, value: string, name: string) => h("div", { class: "figure" }, h("dt", {}, label), h("dd", { "data-figure": name }, value));
  return h("dl", { class: "summary", id },
    item("Total amount", money(figures.total_amount, currency), "total_amount"),
    item("Basic", money(figures.basic_amount, currency), "basic_amount"),
    item("Pay-as-you-go", money(figures.pay_go_amount, currency), "pay_go_amount"),
    item("Events", count(figures.events), "events"),
    item("Active members", count(figures.active_members), "active_members"),
    item("Input tokens", count(figures.input_tokens), "input_tokens"),
    item("Output tokens", count(figures.output_tokens), "output_tokens"));
}
