// A table that shows one page of its rows at a time (the DOM never holds 5,000 rows), with a pager.
import { h, type Child } from "./dom.js";

export interface Column<T> {
  label: string;
  cell: (row: T) => Child;
  numeric?: boolean;
}

export function pagedTable<T>(rows: readonly T[], columns: readonly Column<T>[], pageSize: number, options: { id?: string; empty?: string } = {}): HTMLElement {
  const body = h("tbody");
  const position = h("span", { class: "position" });
  const previous = h("button", { type: "button", class: "previous" }, "‹ Previous");
  const next = h("button", { type: "button", class: "next" }, "Next ›");
  const pages = Math.max(1, Math.ceil(rows.length / pageSize));
  let page = 0;

  const show = (target: number) => {
    page = Math.min(Math.max(target, 0), pages - 1);
    const first = page * pageSize;
    const slice = rows.slice(first, first + pageSize);
    body.replaceChildren(...(slice.length > 0
      ? slice.map((row) => h("tr", {}, ...columns.map((column) => h("td", { class: column.numeric ? "num" : undefined }, column.cell(row)))))
      : [h("tr", {}, h("td", { colspan: columns.length, class: "empty" }, options.empty ?? "nothing in this range"))]));
    position.textContent = rows.length === 0 ? "0 rows" : `rows ${first + 1}–${first + slice.length} of ${rows.length.toLocaleString("en")} · page ${page + 1} of ${pages}`;
    previous.disabled = page === 0;
    next.disabled = page >= pages - 1;
  };
  previous.addEventListener("click", () => show(page - 1));
  next.addEventListener("click", () => show(page + 1));
  show(0);

  return h("div", { class: "table", id: options.id },
    h("table", {},
      h("thead", {}, h("tr", {}, ...columns.map((column) => h("th", { class: column.numeric ? "num" : undefined, scope: "col" }, column.label)))),
      body),
    h("div", { class: "pager" }, previous, position, next));
}
