// Top models and top members of the range by total amount. Members come from the report grouped by
// member, read page by page (page_size 1000, page_token) and ranked here; the table shows 25 at a
// time, so 5,000 members stay one small table with a pager and a filter.
import { h } from "../dom.js";
import { byAmountDesc, count } from "../format.js";
import { memberHref } from "../route.js";
import { pagedTable } from "../table.js";
import type { UsageGroup } from "../types.js";
import { report, type ViewContext } from "./context.js";
import { figureColumns } from "./figures.js";

const MEMBERS_PER_CALL = 1000;

export async function topView(ctx: ViewContext, root: HTMLElement): Promise<void> {
  ctx.status("Loading models and members…");
  // Together, so a failure of either leaves no rejection of the other unhandled.
  const [modelsAnswer, members] = await Promise.all([report(ctx, { bucket: "none", group_by: ["model"] }), allMembers(ctx)]);
  const models = modelsAnswer.buckets[0]?.groups ?? [];
  const ranked = (groups: UsageGroup[]) => [...groups].sort((a, b) => byAmountDesc(a.total_amount, b.total_amount) || (a.user_id < b.user_id ? -1 : 1));

  const rankedModels = ranked(models);
  const rankedMembers = ranked(members).map((group, i) => ({ ...group, rank: i + 1 }));
  type RankedMember = (typeof rankedMembers)[number];
  const memberColumns = [
    { label: "#", numeric: true, cell: (m: RankedMember) => String(m.rank) },
    { label: "Member", cell: (m: RankedMember) => h("a", { href: memberHref(m.user_id, "user") }, m.user_id) },
    { label: "E-mail", cell: (m: RankedMember) => m.email },
    ...figureColumns<RankedMember>(ctx.currency, (m) => m).filter((c) => c.label !== "Active members"),
  ];
  const memberSlot = h("div", {});
  const filter = h("input", { id: "member-filter", type: "search", placeholder: "user_id or e-mail contains…", "aria-label": "Filter members" });
  const showMembers = () => {
    const needle = filter.value.trim().toLowerCase();
    const rows = needle === "" ? rankedMembers : rankedMembers.filter((m) => m.user_id.toLowerCase().includes(needle) || m.email.toLowerCase().includes(needle));
    memberSlot.replaceChildren(pagedTable(rows, memberColumns, 25, { id: "top-members", empty: "no member with usage matches" }));
  };
  filter.addEventListener("input", showMembers);
  showMembers();

  root.append(
    h("h2", {}, `Top models, ${ctx.range.from} to ${ctx.range.to}`),
    pagedTable(rankedModels, [
      { label: "Model", cell: (g) => g.model_name },
      { label: "Type", cell: (g) => g.model_type },
      { label: "Source", cell: (g) => g.model_source },
      ...figureColumns<UsageGroup>(ctx.currency, (g) => g),
    ], 10, { id: "top-models" }),
    h("h2", {}, `Top members (${count(rankedMembers.length)} with usage)`),
    h("p", { class: "filter" }, filter),
    memberSlot,
  );
  ctx.status(`${count(models.length)} models, ${count(rankedMembers.length)} members with usage`);
  ctx.ready();
}

async function allMembers(ctx: ViewContext): Promise<UsageGroup[]> {
  const members: UsageGroup[] = [];
  let pageToken = "";
  do {
    const answer = await report(ctx, { bucket: "none", group_by: ["member"], page_size: MEMBERS_PER_CALL, page_token: pageToken || undefined });
    members.push(...(answer.buckets[0]?.groups ?? []));
    pageToken = answer.next_page_token;
    if (pageToken) ctx.status(`Loading members… ${count(members.length)} so far`);
  } while (pageToken);
  return members;
}
