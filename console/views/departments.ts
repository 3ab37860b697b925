// The department tree with each subtree's spend: a department's row shows the distinct members of its
// whole subtree (the report grouped by department under its parent); expanding it lists its children
// (the children route, 100 a page) with theirs, and the members placed directly in it.
import { h } from "../dom.js";
import { count, money } from "../format.js";
import type { Department, DepartmentPage, Figures, UsageGroup } from "../types.js";
import { report, ZERO, type ViewContext } from "./context.js";

const CHILDREN_PER_PAGE = 100;

export async function departmentsView(ctx: ViewContext, root: HTMLElement): Promise<void> {
  ctx.status("Loading departments…");
  const { items } = await ctx.api.post<{ items: Department[] }>("/openapi/v1/departments/batch-get", { department_ids: ["0"] }, ctx.signal);
  const top = items[0];
  if (!top) {
    root.append(h("p", { class: "notice", id: "no-departments" }, "This enterprise has no departments: its members' usage is in Daily trend and Top members."));
    ctx.status("");
    ctx.ready();
    return;
  }
  const total = (await report(ctx, { bucket: "none", department_id: top.department_id })).buckets[0]?.groups[0] ?? ZERO;
  const tree = h("ul", { class: "tree", role: "tree", id: "department-tree" });
  tree.addEventListener("keydown", (event) => moveInTree(tree, event));
  const rootNode = node(ctx, top, total, 0);
  tree.append(rootNode.element);
  root.append(
    h("h2", {}, `Departments, ${ctx.range.from} to ${ctx.range.to}`),
    h("p", { class: "hint" }, "Each row covers the distinct members of the department's whole subtree; a member in two subtrees counts in both."),
    // Its own sideways scroll on a narrow screen, as the tables have: the columns need about 48rem.
    h("div", { class: "tree-scroll" }, header(), tree));
  await rootNode.expand();
  ctx.status("");
  ctx.ready();
}

/**
 * The tree's keys, as a tree view's (WAI-ARIA): Up and Down go to the department shown above or below, Home and End to the first and
 * last; Right opens a department, or goes to its first child when open; Left closes it, or goes to its parent when closed.
 */
function moveInTree(tree: HTMLElement, event: KeyboardEvent): void {
  // A department's toggle, or a "More departments…" button (which opens nothing).
  const toggle = (event.target as HTMLElement).closest<HTMLButtonElement>("button.toggle, button.more");
  if (!toggle || event.altKey || event.ctrlKey || event.metaKey) return;
  const shown = [...tree.querySelectorAll<HTMLButtonElement>("button.toggle, button.more")].filter((button) => button.closest("[hidden]") === null);
  const at = shown.indexOf(toggle);
  const item = toggle.closest("li")!;
  const isMore = toggle.classList.contains("more");
  const open = toggle.getAttribute("aria-expanded") === "true";
  const firstChild = open && item.contains(shown[at + 1] ?? null) ? shown[at + 1] : undefined;
  const parent = item.parentElement!.closest("li")?.querySelector<HTMLButtonElement>("button.toggle") ?? undefined;
  const moves: Record<string, HTMLButtonElement | undefined> = { ArrowDown: shown[at + 1], ArrowUp: shown[at - 1], Home: shown[0],
    End: shown[shown.length - 1], ArrowRight: isMore ? undefined : open ? firstChild : toggle, ArrowLeft: open ? toggle : parent };
  if (!Object.hasOwn(moves, event.key)) return;
  event.preventDefault(); // no page scroll
  const target = moves[event.key];
  if (target === toggle) toggle.click(); // Right on a closed one opens it, Left on an open one closes it
  else target?.focus();
}

function header(): HTMLElement {
  return h("div", { class: "tree-row tree-head", "aria-hidden": "true" },
    h("span", {}, "Department"), h("span", { class: "num" }, "Total"), h("span", { class: "num" }, "Events"),
    h("span", { class: "num" }, "Active members"), h("span", { class: "num" }, "Tokens in / out"));
}

function cells(figures: Figures, currency: string): HTMLElement[] {
  return [
    h("span", { class: "num", "data-figure": "total_amount" }, money(figures.total_amount, currency)),
    h("span", { class: "num" }, count(figures.events)),
    h("span", { class: "num" }, count(figures.active_members)),
    h("span", { class: "num" }, `${count(figures.input_tokens)} / ${count(figures.output_tokens)}`),
  ];
}

function node(ctx: ViewContext, department: Department, figures: Figures, depth: number): { element: HTMLElement; expand(): Promise<void> } {
  const toggle = h("button", { type: "button", class: "toggle", "aria-expanded": "false", "aria-label": `Expand ${department.name}` }, "▸");
  const name = h("span", { class: "name" }, toggle, h("span", {}, department.name));
  name.style.setProperty("--depth", String(depth)); // CSSOM, not a style attribute: allowed by the CSP
  const row = h("div", { class: "tree-row", "data-department-id": department.department_id }, name, ...cells(figures, ctx.currency));
  const children = h("ul", { role: "group" });
  children.hidden = true;
  const element = h("li", { role: "treeitem", "aria-expanded": "false" }, row, children);
  let loaded = false;

  const setExpanded = (open: boolean) => {
    children.hidden = !open;
    toggle.textContent = open ? "▾" : "▸";
    toggle.setAttribute("aria-expanded", String(open));
    toggle.setAttribute("aria-label", `${open ? "Collapse" : "Expand"} ${department.name}`);
    element.setAttribute("aria-expanded", String(open));
  };

  const loadPage = async (pageToken: string, groups: Map<string, UsageGroup>) => {
    const page = await ctx.api.get<DepartmentPage>(`/openapi/v1/departments/${encodeURIComponent(department.department_id)}/children`,
      { page_size: CHILDREN_PER_PAGE, page_token: pageToken }, ctx.signal);
    for (const child of page.items) children.append(node(ctx, child, groups.get(child.department_id) ?? ZERO, depth + 1).element);
    if (page.next_page_token) {
      const more = h("button", { type: "button", class: "more" }, "More departments…");
      more.addEventListener("click", () => {
        more.parentElement!.remove();
        const before = children.children.length;
        // The focus was on the button just removed: it goes to the first department the page brought.
        loadPage(page.next_page_token, groups).then(() => children.children[before]?.querySelector<HTMLButtonElement>("button.toggle")?.focus())
          .catch((error) => element.dispatchEvent(new CustomEvent("view-error", { bubbles: true, detail: error })));
      });
      children.append(h("li", { class: "more-row" }, more));
    }
    return page.items.length;
  };

  let loading = false;
  const expand = async () => {
    if (!loaded) {
      // Busy, not disabled: a disabled button would drop the keyboard's focus, and a failure must leave it to press again.
      if (loading) return;
      loading = true;
      toggle.setAttribute("aria-busy", "true");
      try {
        const answer = await report(ctx, { bucket: "none", group_by: ["department"], department_id: department.department_id });
        const groups = new Map((answer.buckets[0]?.groups ?? []).map((g) => [g.department_id, g]));
        const direct = groups.get(department.department_id);
        if (direct) {
          const label = h("span", { class: "name direct" }, `members placed directly in ${department.name}`);
          label.style.setProperty("--depth", String(depth + 1));
          children.append(h("li", { role: "none" }, h("div", { class: "tree-row" }, label, ...cells(direct, ctx.currency))));
        }
        const found = await loadPage("", groups);
        if (found === 0 && !direct) children.append(h("li", { role: "none", class: "leaf" }, "no sub-departments"));
        loaded = true;
      } catch (error) {
        children.replaceChildren(); // what came before the failure: the next press loads it all again
        throw error;
      } finally {
        loading = false;
        toggle.removeAttribute("aria-busy");
      }
    }
    setExpanded(true);
  };
  toggle.addEventListener("click", () => {
    if (toggle.getAttribute("aria-expanded") === "true") setExpanded(false);
    else expand().catch((error) => element.dispatchEvent(new CustomEvent("view-error", { bubbles: true, detail: error })));
  });
  return { element, expand };
}
