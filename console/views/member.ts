// One member's usage per model over the range, per day (or hour): found by user_id or e-mail, as the
// address says (#/member/user/… or #/member/email/…), with the report's user_ids/emails filter,
// grouped by member and model.
import { timeChart } from "../chart.js";
import { localTime } from "../dates.js";
import { h } from "../dom.js";
import { byAmountDesc, plotAmount } from "../format.js";
import { windowOf } from "../range.js";
import { memberHref } from "../route.js";
import { pagedTable } from "../table.js";
import type { UsageGroup } from "../types.js";
import { report, type ViewContext } from "./context.js";
import { figureColumns } from "./figures.js";

/** The API's longest user_id (its proto rule): a longer value is no user_id. */
const MAX_USER_ID_CHARACTERS = 128;
/** The API's limit for an e-mail (usage.proto). */
const MAX_EMAIL_CHARACTERS = 320;

interface Cell extends UsageGroup {
  label: string;
}

export async function memberView(ctx: ViewContext, root: HTMLElement, args: string[]): Promise<void> {
  const [by, who] = args.length === 2 && (args[0] === "user" || args[0] === "email") ? [args[0], args[1]!] : [undefined, args.join("/")];
  const input = h("input", { id: "member-input", value: who, placeholder: "user_id or e-mail", "aria-label": "Member", required: true, spellcheck: "false" });
  const form = h("form", { class: "member-form" }, h("label", {}, "Member ", input), h("button", { type: "submit" }, "Show"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = memberHref(input.value.trim());
  });
  root.append(form);
  if (who === "") {
    root.append(h("p", { class: "hint" }, "Pick a member in Top members, or type a user_id or e-mail."));
    ctx.status("");
    ctx.ready();
    return;
  }
  if (by === undefined) {
    await lookUp(ctx, root, who);
    return;
  }

  ctx.status(`Loading ${who}…`);
  const filter = by === "email" ? { emails: [who] } : { user_ids: [who] };
  const [totals, buckets] = await Promise.all([
    report(ctx, { ...filter, bucket: "none", group_by: ["member", "model"] }),
    report(ctx, { ...filter, bucket: ctx.range.granularity, group_by: ["member", "model"] }),
  ]);
  if (totals.not_found_user_ids.length + totals.not_found_emails.length > 0) {
    missing(ctx, root, `No member with the ${by === "email" ? "e-mail" : "user_id"} ${who} in this enterprise.`);
    return;
  }
  const models = [...(totals.buckets[0]?.groups ?? [])].sort((a, b) => byAmountDesc(a.total_amount, b.total_amount));
  const member = models[0];
  const { start_time } = windowOf(ctx.range);
  const times = buckets.buckets.map((b) => Math.max(b.start_time, start_time));
  const label = (b: { date: string; start_time: number }) => ctx.range.granularity === "day" ? b.date : localTime(b.start_time, ctx.range.timeZone);
  const cells: Cell[] = buckets.buckets.flatMap((b) => b.groups.map((g) => ({ ...g, label: label(b) })));
  const modelKey = (g: UsageGroup) => `${g.model_name} · ${g.model_type} · ${g.model_source}`;

  root.append(h("h2", { id: "member-title" }, member ? `${member.user_id} · ${member.email}` : who));
  if (!member) {
    root.append(h("p", { class: "notice" }, `No usage by ${who} from ${ctx.range.from} to ${ctx.range.to}.`));
    ctx.status("");
    ctx.ready();
    return;
  }
  root.append(
    h("h3", {}, "Per model over the range"),
    pagedTable(models, [{ label: "Model", cell: (g) => modelKey(g) }, ...figureColumns<UsageGroup>(ctx.currency, (g) => g).filter((c) => c.label !== "Active members")], 10, { id: "member-models" }),
  );
  const chart = timeChart(times, models.map((m) => ({
    label: m.model_name,
    values: buckets.buckets.map((b) => {
      const g = b.groups.find((x) => modelKey(x) === modelKey(m));
      return g ? plotAmount(g.total_amount) : 0;
    }),
  })), { timeZone: ctx.range.timeZone, title: `Total amount per ${ctx.range.granularity} and model (${ctx.currency})`, yLabel: ctx.currency, onDrawn: () => ctx.ready() });
  root.append(chart,
    h("h3", {}, `Per ${ctx.range.granularity} and model`),
    pagedTable(cells, [
      { label: ctx.range.granularity === "day" ? "Date" : "Hour", cell: (c) => c.label },
      { label: "Model", cell: (c) => modelKey(c) },
      ...figureColumns<Cell>(ctx.currency, (c) => c).filter((c) => c.label !== "Active members"),
    ], 31, { id: "member-days" }));
  ctx.status("");
}

/**
 * A value typed in (or an address without user/ or email/): the page moves to the member whose user_id
 * or e-mail it is, and offers both when it is a user_id and an e-mail at once ("@" may be in a user_id).
 */
async function lookUp(ctx: ViewContext, root: HTMLElement, value: string): Promise<void> {
  // Past an e-mail's length (and a user_id's) it is no member: the API would refuse the lookup rather than find none.
  if ([...value].length > MAX_EMAIL_CHARACTERS) {
    missing(ctx, root, `No member has the user_id or e-mail ${value} in this enterprise.`);
    return;
  }
  ctx.status(`Looking up ${value}…`);
  // Past a user_id's length it can only be an e-mail: asked for as a user_id too, the whole lookup would be refused.
  const maybeUserId = [...value].length <= MAX_USER_ID_CHARACTERS;
  const answer = await report(ctx, { ...(maybeUserId ? { user_ids: [value] } : {}), emails: [value], bucket: "none" });
  const matches = (["user", "email"] as const).filter((by) => by === "user"
    ? maybeUserId && !answer.not_found_user_ids.includes(value) : !answer.not_found_emails.includes(value));
  if (matches.length === 1) {
    location.replace(memberHref(value, matches[0])); // its own address; the hashchange draws it
    return;
  }
  if (matches.length === 0) {
    missing(ctx, root, `No member has the user_id or e-mail ${value} in this enterprise.`);
    return;
  }
  root.append(h("p", { class: "notice", id: "member-choice" }, `${value} is a user_id and an e-mail: show the member with `,
    h("a", { href: memberHref(value, "user") }, `user_id ${value}`), " or the member with ", h("a", { href: memberHref(value, "email") }, `e-mail ${value}`), "."));
  ctx.status("");
  ctx.ready();
}

function missing(ctx: ViewContext, root: HTMLElement, text: string): void {
  root.append(h("p", { class: "notice", id: "member-missing" }, text));
  ctx.status("");
  ctx.ready();
}
