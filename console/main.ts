// The console's entry: sign-in (a pasted token, or an app's credentials exchanged for one), the range
// controls, hash routing between the views, the CSV download, and errors that say what to do.
import "./console.css";
import { Api, ApiError } from "./api.js";
import { today } from "./dates.js";
import { byId, h } from "./dom.js";
import { lastDays, rangeProblem, windowOf, type Granularity, type Range } from "./range.js";
import { parseRoute } from "./route.js";
import { session } from "./session.js";
import type { CoreMetrics, Department } from "./types.js";
import type { ViewContext } from "./views/context.js";
import { departmentsView } from "./views/departments.js";
import { memberView } from "./views/member.js";
import { topView } from "./views/top.js";
import { trendView } from "./views/trend.js";

const DEFAULT_DAYS = 30;

type View = (ctx: ViewContext, root: HTMLElement, args: string[]) => Promise<void>;
const VIEWS: Record<string, View> = { trend: trendView, top: topView, departments: departmentsView, member: memberView };

class UsageConsole {
  private readonly api = new Api(() => session.token(), (error) => this.expired(error));
  private range: Range = lastDays(today("UTC"), DEFAULT_DAYS, "UTC");
  private currency = "";
  private enterpriseName: string | undefined;
  /** The enterprise's currency and zone could not be asked at sign-in (the server did not answer): asked again before each view. */
  private enterpriseUnknown = false;
  private current?: AbortController;
  /** Aborted when the session ends, so its late answers cannot touch the page of the next one. */
  private sessionWork = new AbortController();
  /** Counts the user's sign-ins and sign-outs (and expiries): an app's exchange answered after a later one is dropped (the later one stands). */
  private sessionChoices = 0;

  private readonly signInSection = byId("sign-in");
  private readonly signInMessage = byId("sign-in-message");
  private readonly shell = byId("shell");
  private readonly view = byId("view");
  private readonly error = byId("error");
  private readonly statusLine = byId("status");
  private readonly rangeMessage = byId("range-message");
  private readonly from = byId<HTMLInputElement>("from");
  private readonly to = byId<HTMLInputElement>("to");
  private readonly timeZone = byId<HTMLInputElement>("time-zone");
  private readonly granularity = byId<HTMLSelectElement>("granularity");
  private readonly apply = byId<HTMLButtonElement>("apply");
  private readonly download = byId<HTMLButtonElement>("download");
  private readonly signOutButton = byId<HTMLButtonElement>("sign-out");

  start(): void {
    byId<HTMLFormElement>("token-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const input = byId<HTMLInputElement>("token-input");
      const token = input.value.trim();
      input.value = "";
      if (token === "") return;
      // A header cannot carry other characters (the browser refuses to send it), and the server takes no longer one.
      if (!/^[\x21-\x7e]{1,512}$/.test(token)) {
        this.showSignIn("That is not an access token: a token is printable ASCII without spaces (eat_…), at most 512 characters.");
        return;
      }
      this.sessionChoices++;
      session.signIn(token);
      void this.enter();
    });
    byId<HTMLFormElement>("app-form").addEventListener("submit", (event) => {
      event.preventDefault();
      void this.exchange();
    });
    this.signOutButton.addEventListener("click", () => this.signOut("Signed out."));
    byId<HTMLFormElement>("controls").addEventListener("submit", (event) => {
      event.preventDefault();
      const chosen = this.chosenRange();
      if (rangeProblem(chosen) === undefined) this.applyRange(chosen);
    });
    for (const input of [this.from, this.to, this.timeZone, this.granularity]) input.addEventListener("input", () => this.checkControls());
    this.download.addEventListener("click", () => void this.downloadCsv());
    this.view.addEventListener("view-error", (event) => this.fail((event as CustomEvent).detail));
    window.addEventListener("hashchange", () => void this.render());
    byId<HTMLDataListElement>("time-zones").append(...Intl.supportedValuesOf("timeZone").map((zone) => h("option", { value: zone })));

    if (session.token()) void this.enter();
    else this.showSignIn("");
  }

  private showSignIn(message: string): void {
    this.shell.hidden = true;
    this.signOutButton.hidden = true;
    this.signInSection.hidden = false;
    this.signInMessage.hidden = message === "";
    this.signInMessage.textContent = message;
    byId("enterprise").textContent = "";
    byId<HTMLInputElement>("token-input").focus();
  }

  private async exchange(): Promise<void> {
    const appId = byId<HTMLInputElement>("app-id");
    const appSecret = byId<HTMLInputElement>("app-secret");
    const attempt = ++this.sessionChoices;
    try {
      const { access_token } = await this.api.exchange(appId.value.trim(), appSecret.value);
      if (attempt !== this.sessionChoices) return;
      appSecret.value = "";
      session.signIn(access_token);
      await this.enter();
    } catch (error) {
      if (attempt !== this.sessionChoices) return;
      const message = error instanceof ApiError && error.code === 1001 ? "app_id or app_secret is wrong (or the app was revoked)." : describe(error);
      this.showSignIn(message);
    }
  }

  /** Signed in: learn the enterprise's currency and zone, set the controls, draw the current view. */
  private async enter(): Promise<void> {
    this.signInSection.hidden = true;
    this.shell.hidden = false;
    this.signOutButton.hidden = false;
    this.hideError();
    this.sessionWork.abort();
    this.sessionWork = new AbortController();
    const { signal } = this.sessionWork;
    const [metrics, top] = await Promise.allSettled([
      this.enterpriseMetrics(signal),
      this.api.post<{ items: Department[] }>("/openapi/v1/departments/batch-get", { department_ids: ["0"] }, signal),
    ]);
    if (signal.aborted) return; // signed out (or a 401) meanwhile
    this.enterpriseName = top.status === "fulfilled" ? top.value.items[0]?.name : undefined;
    this.learnEnterprise(metrics);
    // A reload (or a sign-in after an expiry) shows the range applied last in this tab, when the API still takes it.
    const kept = session.range();
    if (kept && rangeProblem(kept) === undefined) {
      this.range = kept;
      this.showRange();
    }
    // The sign-in form just hid under the focus: it goes to the view, as a keyboard or screen-reader user expects.
    if (!this.shell.contains(document.activeElement)) this.view.focus();
    await this.render();
    if (metrics.status === "rejected" && !signal.aborted) this.fail(metrics.reason);
  }

  private enterpriseMetrics(signal: AbortSignal): Promise<CoreMetrics> {
    const probeDay = today("UTC");
    return this.api.get<CoreMetrics>("/openapi/v1/statistics/core-metrics", { start_date: probeDay, end_date: probeDay }, signal);
  }

  /**
   * The enterprise's currency and zone from its metrics, and the last days in that zone. Without statistics:read they stay unknown
   * for good: the controls start in UTC, unlabelled. Any other failure (no answer, 429, 503) is asked again before the next view.
   */
  private learnEnterprise(metrics: PromiseSettledResult<CoreMetrics>): void {
    const known = metrics.status === "fulfilled";
    const zone = known ? metrics.value.time_zone : "UTC";
    this.currency = known ? metrics.value.currency : "";
    this.enterpriseUnknown = !known && !(metrics.reason instanceof ApiError && metrics.reason.status === 403);
    byId("enterprise").textContent = [this.enterpriseName, this.currency, known ? zone : ""].filter(Boolean).join(" · ");
    this.range = lastDays(today(zone), DEFAULT_DAYS, zone);
    this.showRange();
  }

  private expired(error: ApiError): void {
    this.sessionChoices++;
    this.sessionWork.abort();
    this.current?.abort();
    this.view.replaceChildren();
    this.statusLine.textContent = "";
    session.signOut();
    this.showSignIn(`Token expired or wrong: sign in again with a valid access token. (${error.message})`);
  }

  private signOut(message: string): void {
    this.sessionChoices++;
    this.sessionWork.abort();
    this.current?.abort();
    this.view.replaceChildren();
    this.statusLine.textContent = "";
    this.hideError();
    session.signOut();
    session.keepRange(undefined); // the next to sign in here may be of another enterprise, in another zone
    this.showSignIn(message);
  }

  /** The range the user chose: the view shows it, and a reload of this tab keeps it. */
  private applyRange(range: Range): void {
    this.range = range;
    session.keepRange(range);
    void this.render();
  }

  private showRange(): void {
    this.from.value = this.range.from;
    this.to.value = this.range.to;
    this.timeZone.value = this.range.timeZone;
    this.granularity.value = this.range.granularity;
    this.checkControls();
  }

  private chosenRange(): Range {
    return { from: this.from.value, to: this.to.value, timeZone: this.timeZone.value.trim(), granularity: this.granularity.value as Granularity };
  }

  /** The controls refuse a range the API would: the message says which limit, Apply stays disabled. */
  private checkControls(): void {
    const chosen = this.chosenRange();
    const problem = rangeProblem(chosen);
    const exportProblem = rangeProblem({ ...chosen, granularity: "day" });
    this.rangeMessage.textContent = problem ?? "";
    this.apply.disabled = problem !== undefined;
    this.download.disabled = exportProblem !== undefined;
    this.from.setCustomValidity(problem ?? "");
  }

  private async render(): Promise<void> {
    if (!session.token()) return;
    if (this.enterpriseUnknown) {
      const { signal } = this.sessionWork;
      const [metrics] = await Promise.allSettled([this.enterpriseMetrics(signal)]);
      if (signal.aborted) return;
      // Learnt now: the view starts again from the enterprise's last days (what was chosen in UTC meant another day).
      if (metrics.status === "fulfilled" && this.enterpriseUnknown) this.learnEnterprise(metrics);
    }
    const route = parseRoute(location.hash);
    const viewName = !route ? "not-found" : Object.hasOwn(VIEWS, route.view) ? route.view : "trend";
    for (const link of document.querySelectorAll<HTMLAnchorElement>("nav.tabs a")) {
      if (link.dataset.view === viewName) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    this.current?.abort();
    const controller = new AbortController();
    this.current = controller;
    const { signal } = controller;
    const root = h("div", { class: `view-body view-${viewName}` });
    this.view.replaceChildren(root);
    this.view.dataset.view = viewName;
    this.view.dataset.state = "loading";
    this.hideError();
    if (!route) {
      root.append(h("p", { class: "notice", id: "not-found" }, "This address is not a page of the console (it holds a malformed %-escape): choose a view above."));
      this.statusLine.textContent = "";
      this.view.dataset.state = "ready";
      return;
    }
    const ctx: ViewContext = {
      api: this.api, range: this.range, currency: this.currency, signal,
      status: (text) => {
        if (!signal.aborted) this.statusLine.textContent = text;
      },
      ready: () => {
        if (signal.aborted) return;
        this.view.dataset.state = "ready";
        performance.mark(`console:${viewName}:ready`);
      },
    };
    try {
      await VIEWS[viewName]!(ctx, root, route.args);
    } catch (error) {
      if (!signal.aborted) this.fail(error);
    }
  }

  private async downloadCsv(): Promise<void> {
    const range = this.chosenRange();
    if (rangeProblem({ ...range, granularity: "day" }) !== undefined) return;
    // The file and the page show the same range: a range edited but not applied is applied (when the view can show it).
    const applied = this.range;
    const edited = range.from !== applied.from || range.to !== applied.to || range.timeZone !== applied.timeZone || range.granularity !== applied.granularity;
    if (edited && rangeProblem(range) === undefined) this.applyRange(range);
    this.download.disabled = true;
    this.statusLine.textContent = `Exporting ${range.from} to ${range.to}…`;
    try {
      const { blob, fileName } = await this.api.download("/openapi/v1/statistics/usage-export",
        { ...windowOf(range), time_zone: range.timeZone, format: "csv" }, this.sessionWork.signal);
      const url = URL.createObjectURL(blob);
      const link = h("a", { href: url, download: fileName, hidden: true });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      this.statusLine.textContent = `Downloaded ${fileName} (${(blob.size / 1024).toFixed(1)} KiB).`;
    } catch (error) {
      this.fail(error);
    } finally {
      this.checkControls();
    }
  }

  private fail(error: unknown): void {
    if (error instanceof DOMException && error.name === "AbortError") return;
    if (error instanceof ApiError && error.status === 401) return; // expired() has taken over
    this.view.dataset.state = "error";
    this.statusLine.textContent = "";
    this.error.textContent = describe(error);
    this.error.hidden = false;
  }

  private hideError(): void {
    this.error.hidden = true;
    this.error.textContent = "";
  }
}

function describe(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.status === 403) {
      const permission = error.permission ?? "a permission this token lacks";
      return `Missing permission ${permission}: ask for a token (or an app) that carries ${permission}. The server said: ${error.message}`;
    }
    if (error.status === 429 || error.status === 503) {
      // The server's own message may say when already ("… retry after 4 s").
      const when = error.retryAfter && !/retry after \d/i.test(error.message) ? `: try again in ${error.retryAfter} s` : "";
      return `${error.message}${when}.`;
    }
    if (error.status === 0) return `${error.message}.`;
    return `${error.message} (HTTP ${error.status}, code ${error.code})`;
  }
  return `The console failed: ${error instanceof Error ? error.message : String(error)}`;
}

new UsageConsole().start();
