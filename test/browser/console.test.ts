// The usage console in a real browser: Debian's Chromium driven by playwright-core, against the real
// server seeded with the demo enterprise (src/demo/). Signs in (a pasted token, and an app's
// credentials), draws the trend, keeps the range within the API's limits, ranks members and models,
// opens a department, shows a member, downloads the CSV and checks its sums against the API, says
// which permission is missing, returns to sign-in on a wrong token, signs out. Screenshots of each
// view go to test-results/ (CI keeps them); the page's load time with the demo data is printed. A
// second enterprise of 5,000 members shows the pages stay small at that size over 366 days; a third,
// "edge", holds what broke the console once (a user_id with an "@", an e-mail longer than a user_id may be, no departments,
// a count past 2^53).
import { connect, createServer, type AddressInfo } from "node:net";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { getOption } from "@bufbuild/protobuf";
import { parse } from "csv-parse/sync";
import { chromium, type Browser, type BrowserContext, type Page, type Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { AuthService } from "../../gen/enterprise_admin/v1/auth_pb.js";
import { DepartmentService } from "../../gen/enterprise_admin/v1/department_pb.js";
import { EnvironmentConfigService } from "../../gen/enterprise_admin/v1/environment_pb.js";
import { UsageService } from "../../gen/enterprise_admin/v1/usage_pb.js";
import { http as httpRule } from "../../gen/google/api/annotations_pb.js";
import { buildConsole } from "../../scripts/build-console.js";
import { DEMO_ENTERPRISE_ID, demoDirectory } from "../../src/demo/directory.js";
import { demoToday, demoUsageEvents } from "../../src/demo/usage.js";
import { CONSOLE_CSP } from "../../src/console-assets.js";
import { formatMicros, parseMicros } from "../../src/domain/money.js";
import { PERMISSIONS } from "../../src/domain/permissions.js";
import { checkUsageEvent } from "../../src/domain/usage-event.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { recordUsage } from "../../src/operations/record-usage.js";
import { UsageRepository } from "../../src/storage/usage-repository.js";
import { startTestService, type TestService } from "../helpers/service.js";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) console.warn(`browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`);
const SHOTS = "test-results";
const MEMBERS = 5000;

/** Enterprise "scale": 5,000 members in 50 of its 120 departments (more than a page of children), two events each over the last 360 days. */
async function seedScale(service: TestService): Promise<void> {
  const departments = Array.from({ length: 120 }, (_, d) => ({ department_id: String(1000 + d), parent_department_id: "1", name: `Team ${String(d).padStart(2, "0")}` }));
  await importDirectory(service.database, {
    enterprise: { enterprise_id: "scale", name: "Scale Inc", currency: "USD", time_zone: "UTC" },
    departments: [{ department_id: "1", parent_department_id: "0", name: "Scale Inc" }, ...departments],
    members: Array.from({ length: MEMBERS }, (_, m) => ({
      user_id: String(100_000 + m), email: `m${m}@scale.example`, account_type: 1 as const, department_ids: [String(1000 + (m % 50))],
    })),
  });
  // Two events a member, spread over the last 360 days, so every member has usage in a 366-day range.
  const now = Math.floor(Date.now() / 1000);
  const raw = Array.from({ length: MEMBERS * 2 }, (_, i) => ({
    event_id: `scale-${i}`, user_id: String(100_000 + (i % MEMBERS)), model_name: `model-${i % 7}`, model_type: "Chat", model_source: "Builtin",
    timestamp: now - 86_400 - (i * 7919) % (360 * 86_400), input_tokens: 1000 + (i % 97), output_tokens: 200 + (i % 13),
    basic_amount: formatMicros(BigInt(1000 + (i % 5000))), pay_go_amount: "0",
  }));
  await recordUsage(new UsageRepository(service.database), "scale", raw.map((event, i) => ({ event: checkUsageEvent(event, `event ${i}`), where: `event ${i}` })));
}

/**
 * Enterprise "edge" (UTC, no departments): a member whose user_id is another member's e-mail, and
 * input tokens whose sum is past 2^53 and odd (a float could not hold it): 112 + 9,101 × 999,999,999,999.
 */
const EDGE_INPUT_TOKENS = "9,100,999,999,991,011";
/** An e-mail longer than a user_id may be (128 characters): 60 + 1 + 80. */
const LONG_EMAIL = `${"l".repeat(60)}@${"d".repeat(71)}.example`;
async function seedEdge(service: TestService): Promise<void> {
  await importDirectory(service.database, {
    enterprise: { enterprise_id: "edge", name: "Edge Ltd", currency: "USD", time_zone: "UTC" },
    departments: [],
    members: [
      { user_id: "bob@edge.example", email: "alice@edge.example", account_type: 1, department_ids: [] },
      { user_id: "u2", email: "bob@edge.example", account_type: 1, department_ids: [] },
      { user_id: "u3", email: LONG_EMAIL, account_type: 1, department_ids: [] },
    ],
  });
  const at = Math.floor(Date.now() / 1000) - 2 * 86_400;
  const event = (i: number, user_id: string, model_name: string, input_tokens: number) => ({
    event_id: `edge-${i}`, user_id, model_name, model_type: "Chat", model_source: "Builtin", timestamp: at, input_tokens, output_tokens: 1, basic_amount: "0.000001", pay_go_amount: "0",
  });
  const raw = [event(0, "bob@edge.example", "alpha", 112), ...Array.from({ length: 9101 }, (_, i) => event(i + 1, "u2", "beta", 999_999_999_999))];
  await recordUsage(new UsageRepository(service.database), "edge", raw.map((e, i) => ({ event: checkUsageEvent(e, `event ${i}`), where: `event ${i}` })));
}

interface Seen {
  url: string;
  authorization?: string;
  body?: string;
}

describe.skipIf(!haveChromium)("the usage console in Chromium, on the demo enterprise (and 5,000 members)", () => {
  let service: TestService;
  let browser: Browser;
  let token: string;
  let edgeToken: string;
  let context: BrowserContext;
  let page: Page;
  const seen: Seen[] = [];
  const pageErrors: string[] = [];

  const api = async <T>(path: string, init: RequestInit = {}, bearer = token): Promise<{ status: number; data: T }> => {
    const response = await fetch(service.baseUrl + path, { ...init, headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json", ...init.headers } });
    const body = (await response.json()) as { data: T };
    return { status: response.status, data: body.data };
  };
  const viewReady = (view: string, target = page) => target.locator(`#view[data-view="${view}"][data-state="ready"]`).waitFor();
  /** A fresh load of the page, signed out. */
  const openSignedOut = async () => {
    await page.goto(`${service.baseUrl}/console`);
    await page.evaluate("sessionStorage.clear()");
    await page.reload();
    await page.locator("#sign-in").waitFor();
  };
  /** A fresh load of the page signed in with `bearer`, the trend drawn. */
  const signIn = async (bearer: string) => {
    await openSignedOut();
    await page.fill("#token-input", bearer);
    await page.click("#token-form button[type=submit]");
    await viewReady("trend");
  };
  /** Uncaught errors and unhandled rejections in the page while `run` runs. */
  const uncaughtDuring = async (run: () => Promise<void>): Promise<string[]> => {
    const uncaught: string[] = [];
    const listener = (error: Error) => uncaught.push(error.message);
    page.on("pageerror", listener);
    try {
      await run();
      await page.evaluate("0"); // a round trip, so the page's last errors have reached the test
    } finally {
      page.off("pageerror", listener);
    }
    return uncaught;
  };
  const shot = (name: string, target = page) => target.screenshot({ path: `${SHOTS}/console-${name}.png`, fullPage: true });
  const watch = (target: Page) => {
    target.on("request", (request: Request) => {
      if (new URL(request.url()).pathname.startsWith("/openapi/")) {
        seen.push({ url: request.url(), authorization: request.headers().authorization, body: request.postData() ?? undefined });
      }
    });
    target.on("pageerror", (error) => pageErrors.push(error.message));
    target.on("console", (message) => {
      if (message.type() === "error" && !/status of 40[13]/.test(message.text())) pageErrors.push(message.text());
    });
  };
  /** A usage-report request the page made, replayed with the test's token: the API's own answer. */
  const replayReport = async (match: (body: Record<string, unknown>) => boolean) => {
    const request = seen.filter((s) => s.url.endsWith("/openapi/v1/statistics/usage-report") && s.body).reverse()
      .find((s) => match(JSON.parse(s.body!) as Record<string, unknown>));
    expect(request, "the page asked for this report").toBeDefined();
    return (await api<{ buckets: { groups: Record<string, string | number>[] }[] }>("/openapi/v1/statistics/usage-report", { method: "POST", body: request!.body })).data;
  };

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    await buildConsole();
    service = await startTestService("sqlite");
    await importDirectory(service.database, demoDirectory);
    const events = demoUsageEvents(demoToday()).map((raw, i) => ({ event: checkUsageEvent(raw, `demo event ${i}`), where: `demo event ${i}` }));
    await recordUsage(new UsageRepository(service.database), DEMO_ENTERPRISE_ID, events);
    token = await service.token(PERMISSIONS, DEMO_ENTERPRISE_ID);
    await seedScale(service);
    await seedEdge(service);
    edgeToken = await service.token(["statistics:read", "departments:read"], "edge");
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
    context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1400, height: 900 } });
    context.setDefaultTimeout(10_000); // below the test's own 30 s, so a stuck step names itself
    page = await context.newPage();
    watch(page);
  });

  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  test("GET /console and its assets answer without a token, under a CSP with no inline script or style", async () => {
    const page = await fetch(`${service.baseUrl}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).toContain("style-src 'self'");
    expect(CONSOLE_CSP).not.toContain("unsafe");
    const html = await page.text();
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/); // every script is a file
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    for (const asset of ["console.js", "console.css"]) {
      const response = await fetch(`${service.baseUrl}/console/${asset}`);
      expect(response.status, asset).toBe(200);
      expect(response.headers.get("content-security-policy")).toBe(CONSOLE_CSP);
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    }
    expect((await fetch(`${service.baseUrl}/console/../package.json`)).status).toBe(404);
    expect((await fetch(`${service.baseUrl}/console/server.ts`)).status).toBe(404);
    const post = await fetch(`${service.baseUrl}/console`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
  });

  test("every REST route but the token exchange refuses a call without a token (401, code 1002)", async () => {
    let checked = 0;
    for (const service_ of [AuthService, DepartmentService, EnvironmentConfigService, UsageService]) {
      for (const method of service_.methods) {
        const rule = getOption(method, httpRule);
        if (!rule.pattern.case || rule.pattern.case === "custom") continue;
        const path = rule.pattern.value.replace(/\{[^}]+\}/g, "x");
        const response = await fetch(service.baseUrl + path, {
          method: rule.pattern.case.toUpperCase(),
          headers: rule.body ? { "content-type": "application/json" } : {},
          body: rule.body ? "{}" : undefined,
        });
        const body = (await response.json()) as { code: number };
        if (method === AuthService.method.createAccessToken) expect(response.status, path).not.toBe(401);
        else expect([response.status, body.code], `${rule.pattern.case} ${path}`).toEqual([401, 1002]);
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(15);
  });

  test("signs in with a pasted token and draws the demo enterprise's daily trend; the token travels only in the Authorization header", async () => {
    await page.goto(`${service.baseUrl}/console`);
    await page.locator("#sign-in").waitFor();
    await shot("sign-in");
    await page.fill("#token-input", token);
    await page.click("#token-form button[type=submit]");
    await viewReady("trend");
    await expect.poll(() => page.locator("#enterprise").textContent()).toBe("Demo Corp · CNY · Asia/Shanghai");
    await page.locator('.chart[data-drawn="true"] canvas').first().waitFor();
    await shot("trend");

    // The range's totals are the API's figures, shown as the API gives them, in the enterprise's currency.
    const total = (await replayReport((b) => b.bucket === "none" && !b.group_by)).buckets[0]!.groups[0]!;
    expect(Number(total.events)).toBeGreaterThan(0);
    expect(await page.locator('#trend-summary [data-figure="total_amount"]').textContent()).toBe(`${total.total_amount} CNY`);
    expect(await page.locator('#trend-summary [data-figure="events"]').textContent()).toBe(Number(total.events).toLocaleString("en"));
    // 30 days in the table, 31 rows a page at most.
    expect(await page.locator("#trend-table tbody tr").count()).toBe(30);

    expect(seen.length).toBeGreaterThan(0);
    for (const request of seen) {
      expect(request.authorization, request.url).toBe(`Bearer ${token}`);
      expect(request.url).not.toContain(token);
    }
    expect(await page.evaluate("[sessionStorage.length, localStorage.length, document.cookie]")).toEqual([1, 0, ""]);
    expect(pageErrors).toEqual([]);
  });

  test("load time with the demo data: a reload with the session's token until the trend is drawn", async () => {
    await page.reload();
    await viewReady("trend");
    // Evaluated in the page (a string: the test's own types have no DOM).
    const timing = await page.evaluate<{ domContentLoaded: number; load: number; trendDrawn: number }>(`(() => {
      const navigation = performance.getEntriesByType("navigation")[0];
      return { domContentLoaded: navigation.domContentLoadedEventEnd, load: navigation.loadEventEnd,
        trendDrawn: performance.getEntriesByName("console:trend:ready")[0].startTime };
    })()`);
    console.log(`console load time with the demo data (30 days, ${demoDirectory.members.length} members): ` +
      `DOMContentLoaded ${timing.domContentLoaded.toFixed(0)} ms, load ${timing.load.toFixed(0)} ms, ` +
      `trend drawn ${timing.trendDrawn.toFixed(0)} ms after navigation start`);
    expect(timing.trendDrawn).toBeGreaterThan(0);
    expect(timing.trendDrawn).toBeLessThan(10_000);
  });

  test("the range controls keep to the API's limits: 366 days, 31 days of hours, a real time zone", async () => {
    const to = await page.inputValue("#to");
    const minusDays = (n: number) => new Date(Date.parse(`${to}T00:00:00Z`) - n * 86_400_000).toISOString().slice(0, 10);
    await page.fill("#from", minusDays(366)); // 367 days, both counted
    expect(await page.textContent("#range-message")).toContain("at most 366 days");
    expect(await page.isDisabled("#apply")).toBe(true);
    expect(await page.isDisabled("#download")).toBe(true);
    await page.fill("#from", minusDays(365));
    expect(await page.textContent("#range-message")).toBe("");
    expect(await page.isDisabled("#apply")).toBe(false);

    await page.fill("#from", minusDays(31));
    await page.selectOption("#granularity", "hour");
    expect(await page.textContent("#range-message")).toContain("hourly buckets cover at most 31 days");
    expect(await page.isDisabled("#apply")).toBe(true);
    expect(await page.isDisabled("#download")).toBe(false); // the export has no hour limit

    await page.fill("#time-zone", "Mars/Olympus");
    await page.fill("#from", minusDays(6));
    expect(await page.textContent("#range-message")).toContain('"Mars/Olympus" is not an IANA time zone');
    await page.fill("#time-zone", "Europe/Berlin");
    expect(await page.textContent("#range-message")).toBe("");
    await page.click("#apply");
    await viewReady("trend");
    expect(await page.locator("#trend-table .position").textContent()).toMatch(/of 16[789] · page 1 of 7/); // 7 days of hours
    await shot("trend-hours");

    await page.fill("#from", minusDays(29));
    await page.fill("#time-zone", "Asia/Shanghai");
    await page.selectOption("#granularity", "day");
    await page.click("#apply");
    await viewReady("trend");
  });

  test("ranks models and members by amount, a page at a time", async () => {
    await page.click('nav a[data-view="top"]');
    await viewReady("top");
    const models = (await replayReport((b) => JSON.stringify(b.group_by) === '["model"]')).buckets[0]!.groups;
    const top = [...models].sort((a, b) => Number(parseMicros(String(b.total_amount))! - parseMicros(String(a.total_amount))!))[0]!;
    const firstModel = page.locator("#top-models tbody tr").first();
    expect(await firstModel.locator("td").first().textContent()).toBe(top.model_name);
    expect(await firstModel.locator("td").last().textContent()).toBe(`${top.total_amount} CNY`);
    const members = await page.locator("#top-members tbody tr").count();
    expect(members).toBe(demoDirectory.members.length);
    await page.fill("#member-filter", "li.lei");
    expect(await page.locator("#top-members tbody tr").count()).toBe(1);
    await shot("top");
    await page.fill("#member-filter", "");
  });

  test("opens a department: each child's subtree spend, as the report grouped by department gives it", async () => {
    await page.click('nav a[data-view="departments"]');
    await viewReady("departments");
    const root = await replayReport((b) => b.department_id === "100" && !b.group_by);
    const rootRow = page.locator('.tree-row[data-department-id="100"]');
    expect(await rootRow.locator('[data-figure="total_amount"]').textContent()).toBe(`${root.buckets[0]!.groups[0]!.total_amount} CNY`);
    await page.locator('.tree-row[data-department-id="110"]').waitFor(); // the root opens by itself

    await page.click('button[aria-label="Expand Engineering"]');
    await page.locator('.tree-row[data-department-id="111"]').waitFor();
    const engineering = (await replayReport((b) => b.department_id === "110" && JSON.stringify(b.group_by) === '["department"]')).buckets[0]!.groups;
    const platform = engineering.find((g) => g.department_id === "111")!;
    expect(await page.locator('.tree-row[data-department-id="111"] [data-figure="total_amount"]').textContent()).toBe(`${platform.total_amount} CNY`);
    expect(await page.getAttribute('button[aria-label="Collapse Engineering"]', "aria-expanded")).toBe("true");
    await shot("departments");
  });

  test("a member's page: usage per model per day", async () => {
    await page.click('nav a[data-view="top"]');
    await viewReady("top");
    await page.click('#top-members a[href="#/member/user/7001"]');
    await viewReady("member");
    expect(await page.textContent("#member-title")).toBe("7001 · li.lei@demo.example");
    const models = (await replayReport((b) => b.bucket === "none" && JSON.stringify(b.user_ids) === '["7001"]')).buckets[0]!.groups;
    expect(await page.locator("#member-models tbody tr").count()).toBe(models.length);
    expect(await page.locator("#member-days tbody tr").count()).toBeGreaterThan(0);
    await shot("member");
  });

  test("downloads the CSV export with the token in the header only, and its sums are the API's", async () => {
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#download")]);
    const request = seen.filter((s) => s.url.includes("/openapi/v1/statistics/usage-export")).at(-1)!;
    expect(request.authorization).toBe(`Bearer ${token}`);
    expect(request.url).not.toContain(token);
    expect(download.suggestedFilename()).toMatch(/^usage-\d{4}-\d{2}-\d{2}-\d{4}-\d{2}-\d{2}\.csv$/);
    const rows = parse(readFileSync((await download.path())!), { columns: true }) as Record<string, string>[];
    expect(rows.length).toBeGreaterThan(0);
    const sum = (column: string) => rows.reduce((total, row) => total + BigInt(row[column]!), 0n);
    const money = (column: string) => formatMicros(rows.reduce((total, row) => total + parseMicros(row[column]!)!, 0n));

    const query = new URL(request.url).searchParams;
    const { data } = await api<{ currency: string; buckets: { groups: Record<string, string | number>[] }[] }>("/openapi/v1/statistics/usage-report", {
      method: "POST",
      body: JSON.stringify({ start_time: Number(query.get("start_time")), end_time: Number(query.get("end_time")), time_zone: query.get("time_zone"), bucket: "none" }),
    });
    const total = data.buckets[0]!.groups[0]!;
    expect({ events: sum("events"), input: sum("input_tokens"), output: sum("output_tokens"), basic: money("basic_amount"), payGo: money("pay_go_amount"), total: money("total_amount") })
      .toEqual({ events: BigInt(total.events!), input: BigInt(total.input_tokens!), output: BigInt(total.output_tokens!), basic: total.basic_amount, payGo: total.pay_go_amount, total: total.total_amount });
    expect(new Set(rows.map((row) => row.currency))).toEqual(new Set([data.currency]));
    expect(await page.textContent("#status")).toContain(`Downloaded ${download.suggestedFilename()}`);
  });

  test("an export whose body stops before its end (cut at the server's deadline, a dropped connection) says so and saves nothing", async () => {
    // The server's real answer through a proxy that drops the connection 40 bytes into the body, as a cut at the deadline ends it.
    const proxy = createServer((client) => {
      const upstream = connect(service.port, "127.0.0.1");
      client.pipe(upstream);
      let answer = Buffer.alloc(0);
      upstream.on("data", (chunk: Buffer) => {
        answer = Buffer.concat([answer, chunk]);
        const bodyAt = answer.indexOf("\r\n\r\n");
        if (bodyAt < 0 || answer.length < bodyAt + 4 + 40) return;
        client.end(answer.subarray(0, bodyAt + 4 + 40), () => client.destroy());
        upstream.destroy();
      });
      client.on("error", () => upstream.destroy());
      upstream.on("error", () => client.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const proxied = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    await page.route("**/openapi/v1/statistics/usage-export*", (route) => route.continue({ url: route.request().url().replace(service.baseUrl, proxied) }));
    let saved = false;
    page.once("download", () => (saved = true));
    try {
      await page.click("#download");
      await page.waitForSelector("#error:not([hidden])");
      expect(await page.textContent("#error")).toMatch(/^The export stopped before its end, and nothing was saved: .*\(REQUEST_TIMEOUT_MS, 60 s by default\)/);
      expect(saved).toBe(false);
    } finally {
      await page.unroute("**/openapi/v1/statistics/usage-export*");
      await new Promise((resolve) => proxy.close(resolve));
    }
    // Chromium reports the cut body itself: that one line, nothing else.
    expect(pageErrors.splice(0)).toStrictEqual(["Failed to load resource: net::ERR_INCOMPLETE_CHUNKED_ENCODING"]);
  });

  test("signs out: back to sign-in, the token gone from the tab", async () => {
    await page.click("#sign-out");
    await page.locator("#sign-in").waitFor();
    expect(await page.textContent("#sign-in-message")).toBe("Signed out.");
    expect(await page.evaluate("sessionStorage.length")).toBe(0);
    expect(await page.isHidden("#shell")).toBe(true);
    await shot("signed-out");
    expect(pageErrors).toEqual([]);
  });

  test("signs in by exchanging an app's app_id and app_secret", async () => {
    const app = await service.access.createApp(DEMO_ENTERPRISE_ID, ["statistics:read", "departments:read"], "console");
    await openSignedOut();
    await page.fill("#app-id", app.app_id);
    await page.fill("#app-secret", "eas_wrong");
    await page.click("#app-form button[type=submit]");
    await expect.poll(() => page.textContent("#sign-in-message")).toContain("app_id or app_secret is wrong");
    await page.fill("#app-secret", app.app_secret);
    await page.click("#app-form button[type=submit]");
    await viewReady("trend");
    expect(await page.evaluate("sessionStorage.getItem('enterprise-admin.access-token')")).toMatch(/^eat_/);
    await page.click("#sign-out");
  });

  test("an app's exchange still in flight when a token is pasted, or when the user signs out, signs nobody in (it took over the session)", async () => {
    const app = await service.access.createApp(DEMO_ENTERPRISE_ID, ["statistics:read", "departments:read"], "console-late");
    const pasted = await service.access.createToken(DEMO_ENTERPRISE_ID, [...PERMISSIONS], 3600);
    const stored = () => page.evaluate("sessionStorage.getItem('enterprise-admin.access-token')");
    /** Sends the app's sign-in, held until `during` has run, then lets it through and waits for the page to have its answer. */
    const exchangeHeldDuring = async (during: () => Promise<void>) => {
      let release = () => {};
      const held = new Promise<void>((resolve) => (release = resolve));
      await page.route("**/openapi/v1/auth/token", async (route) => (await held, route.continue()));
      try {
        const requested = page.waitForRequest("**/openapi/v1/auth/token");
        await page.fill("#app-id", app.app_id);
        await page.fill("#app-secret", app.app_secret);
        await page.click("#app-form button[type=submit]");
        await requested;
        await during();
        const answered = page.waitForResponse("**/openapi/v1/auth/token");
        release();
        expect((await answered).status()).toBe(200);
        await page.evaluate("new Promise((resolve) => setTimeout(resolve, 300))"); // the page's handling of the answer
      } finally {
        release();
        await page.unroute("**/openapi/v1/auth/token");
      }
    };

    await openSignedOut();
    await exchangeHeldDuring(async () => {
      await page.fill("#token-input", pasted.accessToken);
      await page.click("#token-form button[type=submit]");
      await viewReady("trend");
    });
    expect(await stored()).toBe(pasted.accessToken);
    expect(await page.isHidden("#sign-in")).toBe(true);

    await openSignedOut();
    await exchangeHeldDuring(async () => {
      await page.fill("#token-input", pasted.accessToken);
      await page.click("#token-form button[type=submit]");
      await viewReady("trend");
      await page.click("#sign-out");
      await page.locator("#sign-in").waitFor();
    });
    expect(await stored()).toBe(null);
    expect(await page.textContent("#sign-in-message")).toBe("Signed out.");
    expect(await page.isHidden("#shell")).toBe(true);
  });

  test("a wrong or revoked token says so and returns to sign-in", async () => {
    await openSignedOut();
    await page.fill("#token-input", "eat_not-a-real-token");
    await page.click("#token-form button[type=submit]");
    await expect.poll(() => page.textContent("#sign-in-message")).toContain("Token expired or wrong");
    expect(await page.isVisible("#sign-in")).toBe(true);
    // One the browser cannot send in a header, or too long for the server: said at once, nothing kept (it opened the main page).
    for (const notAToken of ["eat_é", `eat_${"x".repeat(509)}`]) { // 513 characters
      await page.fill("#token-input", notAToken);
      await page.click("#token-form button[type=submit]");
      await expect.poll(() => page.textContent("#sign-in-message")).toContain("That is not an access token");
      expect([await page.isVisible("#sign-in"), await page.evaluate("sessionStorage.length")]).toStrictEqual([true, 0]);
    }

    const { tokenId, accessToken } = await service.access.createToken(DEMO_ENTERPRISE_ID, [...PERMISSIONS], 3600);
    await page.fill("#token-input", accessToken);
    await page.click("#token-form button[type=submit]");
    await viewReady("trend");
    await service.access.revokeToken(tokenId);
    await page.click('nav a[data-view="departments"]');
    await page.locator("#sign-in").waitFor(); // visible again
    expect(await page.textContent("#sign-in-message")).toContain("Token expired or wrong");
    expect(await page.evaluate("sessionStorage.length")).toBe(0);
    await shot("token-expired");
  });

  test("a token without statistics:read is told which permission is missing", async () => {
    const narrow = await service.token(["departments:read"], DEMO_ENTERPRISE_ID);
    await openSignedOut();
    await page.fill("#token-input", narrow);
    await page.click("#token-form button[type=submit]");
    await expect.poll(() => page.textContent("#error")).toContain("Missing permission statistics:read");
    expect(await page.isVisible("#shell")).toBe(true); // signed in: the token is valid, just narrow
    await shot("missing-permission");
    await page.click("#sign-out");
  });

  test("366 days and 5,000 members: one page of rows in the DOM, members read 1,000 a call", async () => {
    const token = await service.token(["statistics:read", "departments:read"], "scale");
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.setDefaultTimeout(20_000);
    const reports: string[] = [];
    page.on("request", (request) => {
      if (request.url().endsWith("/usage-report")) reports.push(request.postData() ?? "");
    });
    await page.goto(`${service.baseUrl}/console`);
    await page.fill("#token-input", token);
    await page.click("#token-form button[type=submit]");
    await page.locator('#view[data-view="trend"][data-state="ready"]').waitFor();
    const to = await page.inputValue("#to");
    await page.fill("#from", new Date(Date.parse(`${to}T00:00:00Z`) - 365 * 86_400_000).toISOString().slice(0, 10));
    await page.click("#apply");
    await page.locator('#view[data-view="trend"][data-state="ready"]').waitFor();
    expect(await page.locator("#trend-table tbody tr").count()).toBe(31);
    expect(await page.textContent("#trend-table .position")).toBe("rows 1–31 of 366 · page 1 of 12");

    const started = Date.now();
    await page.click('nav a[data-view="top"]');
    await page.locator('#view[data-view="top"][data-state="ready"]').waitFor();
    const topMs = Date.now() - started;
    expect(await page.locator("#top-members tbody tr").count()).toBe(25);
    expect(await page.textContent("#top-members .position")).toBe("rows 1–25 of 5,000 · page 1 of 200");
    const memberPages = reports.map((body) => JSON.parse(body) as { group_by?: string[]; page_size?: number })
      .filter((body) => JSON.stringify(body.group_by) === '["member"]');
    expect(memberPages.map((body) => body.page_size)).toEqual([1000, 1000, 1000, 1000, 1000]);
    await page.click("#top-members .next");
    expect(await page.textContent("#top-members .position")).toBe("rows 26–50 of 5,000 · page 2 of 200");
    await page.screenshot({ path: `${SHOTS}/console-top-5000-members.png`, fullPage: true });
    console.log(`top members and models, 5,000 members over 366 days: ready ${topMs} ms after the click`);
    await page.close();
  });

  test("Top members: a failed member report is shown, and the model report left in flight is no unhandled rejection when the user moves on", async () => {
    await signIn(token);
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route("**/openapi/v1/statistics/usage-report", async (route) => {
      const body = route.request().postData() ?? "";
      if (body.includes('"group_by":["member"]')) {
        return route.fulfill({ status: 503, contentType: "application/json", headers: { "retry-after": "1" }, body: '{"code":5030,"message":"the store is busy; retry later","data":null}' });
      }
      if (body.includes('"group_by":["model"]')) await held;
      return route.continue().catch(() => {}); // the page may have given up on it
    });
    const uncaught = await uncaughtDuring(async () => {
      await page.click('nav a[data-view="top"]');
      await expect.poll(() => page.textContent("#error")).toContain("the store is busy; retry later: try again in 1 s");
      await page.click('nav a[data-view="trend"]'); // aborts the model report still held
      await viewReady("trend");
    }).finally(async () => {
      release();
      await page.unroute("**/openapi/v1/statistics/usage-report");
    });
    expect(uncaught).toEqual([]);
  });

  test("a department whose opening failed opens when pressed again, the keyboard's focus kept on it", async () => {
    await signIn(token);
    await page.click('nav a[data-view="departments"]');
    await viewReady("departments");
    await page.locator('.tree-row[data-department-id="110"]').waitFor();
    // The server does not answer the first time (it was down a moment).
    let failures = 1;
    await page.route("**/openapi/v1/statistics/usage-report", (route) => (failures-- > 0 ? route.abort("connectionrefused") : route.continue()));
    try {
      await page.focus('button[aria-label="Expand Engineering"]');
      await page.keyboard.press("Enter");
      await expect.poll(() => page.textContent("#error")).toContain("the server did not answer");
      expect(await page.evaluate("document.activeElement?.getAttribute('aria-label')")).toBe("Expand Engineering");
      await page.keyboard.press("Enter"); // it used to stay disabled until the whole view was drawn again
      await page.locator('.tree-row[data-department-id="111"]').waitFor();
      expect(await page.locator('.tree-row[data-department-id="111"]').count()).toBe(1);
    } finally {
      await page.unroute("**/openapi/v1/statistics/usage-report");
    }
  });

  test("the department tree answers the arrow keys as a tree view does: Up and Down, Right opens or goes in, Left closes or goes out, Home and End", async () => {
    await signIn(token);
    await page.click('nav a[data-view="departments"]');
    await viewReady("departments");
    await page.locator('.tree-row[data-department-id="110"]').waitFor();
    const focused = () => page.evaluate("document.activeElement?.getAttribute('aria-label')");
    const press = async (key: string) => {
      await page.keyboard.press(key);
      return focused();
    };
    await page.focus('button[aria-label="Collapse Demo Corp"]');
    expect(await press("ArrowDown")).toBe("Expand Engineering");
    await page.keyboard.press("ArrowRight");
    await page.locator('.tree-row[data-department-id="111"]').waitFor();
    expect(await focused()).toBe("Collapse Engineering"); // opened, the focus stays
    expect(await press("ArrowRight")).toBe("Expand Platform"); // its first child
    expect(await press("ArrowDown")).toBe("Expand Applications");
    expect(await press("ArrowLeft")).toBe("Collapse Engineering"); // its parent
    expect(await press("ArrowLeft")).toBe("Expand Engineering"); // closed
    expect(await page.isHidden('.tree-row[data-department-id="111"]')).toBe(true);
    expect(await press("ArrowDown")).toBe("Expand Sales"); // past Engineering's hidden children
    expect(await press("End")).toBe("Expand Research");
    expect(await press("ArrowDown")).toBe("Expand Research"); // the last stays
    expect(await press("Home")).toBe("Collapse Demo Corp");
    expect(await press("ArrowUp")).toBe("Collapse Demo Corp");
  });

  test("the tree's keys reach \"More departments…\", and pressing it puts the focus on the first department it brought", async () => {
    await signIn(await service.token(["statistics:read", "departments:read"], "scale"));
    await page.click('nav a[data-view="departments"]');
    await viewReady("departments");
    await page.focus('button[aria-label="Collapse Scale Inc"]');
    await page.keyboard.press("End");
    expect(await page.evaluate("document.activeElement?.textContent")).toBe("More departments…");
    await page.keyboard.press("ArrowUp");
    expect(await page.evaluate("document.activeElement?.getAttribute('aria-label')")).toBe("Expand Team 99");
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("Enter");
    await expect.poll(() => page.evaluate("document.activeElement?.getAttribute('aria-label')")).toBe("Expand Team 100");
    await page.keyboard.press("End");
    expect(await page.evaluate("document.activeElement?.getAttribute('aria-label')")).toBe("Expand Team 119");
  });

  test("Download CSV with an edited range not applied yet: the view shows the range the file holds", async () => {
    await signIn(token);
    const zone = demoDirectory.enterprise.time_zone!;
    const to = await page.inputValue("#to");
    const from = new Date(Date.parse(`${to}T00:00:00Z`) - 2 * 86_400_000).toISOString().slice(0, 10);
    await page.fill("#from", from);
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#download")]);
    expect(download.suggestedFilename()).toBe(`usage-${from}-${to}.csv`);
    await viewReady("trend");
    await expect.poll(() => seen.some((s) => s.url.includes("/statistics/core-metrics") && s.url.includes(`start_date=${from}`)
      && s.url.includes(`end_date=${to}`) && s.url.includes(`time_zone=${encodeURIComponent(zone)}`))).toBe(true);
  });

  test("after signing in the focus is on the view; a reload shows the range applied last in the tab; signing out forgets it", async () => {
    await signIn(token);
    expect(await page.evaluate("document.activeElement.id")).toBe("view");
    const to = await page.inputValue("#to");
    const from = new Date(Date.parse(`${to}T00:00:00Z`) - 9 * 86_400_000).toISOString().slice(0, 10);
    await page.fill("#from", from);
    await page.fill("#time-zone", "Asia/Kathmandu");
    await page.selectOption("#granularity", "hour");
    await page.click("#apply");
    await viewReady("trend");
    const asked = seen.length;
    await page.reload();
    await viewReady("trend");
    const controls = () => Promise.all(["#from", "#to", "#time-zone", "#granularity"].map((control) => page.inputValue(control)));
    expect(await controls()).toEqual([from, to, "Asia/Kathmandu", "hour"]);
    // The view drew that range: its report asked for hours in Kathmandu.
    expect(seen.slice(asked).some((s) => s.body?.includes('"time_zone":"Asia/Kathmandu"') && s.body.includes('"bucket":"hour"'))).toBe(true);

    await page.click("#sign-out");
    await page.locator("#sign-in").waitFor();
    await page.fill("#token-input", token);
    await page.click("#token-form button[type=submit]");
    await viewReady("trend");
    const zone = demoDirectory.enterprise.time_zone!;
    const lastThirtyDays = [new Date(Date.parse(`${to}T00:00:00Z`) - 29 * 86_400_000).toISOString().slice(0, 10), to, zone, "day"];
    expect(await controls()).toEqual(lastThirtyDays);
    // A stored range that is none (buckets of a week) is not taken.
    await page.evaluate(`sessionStorage.setItem("enterprise-admin.range", JSON.stringify({ from: "2026-11-01", to: "2026-11-07", timeZone: "UTC", granularity: "week" }))`);
    await page.reload();
    await viewReady("trend");
    expect(await controls()).toEqual(lastThirtyDays);
  });

  test("signed in while the server did not answer: the next view asks again for the enterprise's currency and zone", async () => {
    await openSignedOut();
    await page.route("**/openapi/v1/statistics/core-metrics**", (route) => route.abort("connectionrefused"));
    await page.fill("#token-input", token);
    await page.click("#token-form button[type=submit]");
    await expect.poll(() => page.textContent("#error")).toContain("the server did not answer");
    expect(await page.textContent("#enterprise")).not.toContain("CNY");
    await page.unroute("**/openapi/v1/statistics/core-metrics**");
    await page.click("#controls button[type=submit]"); // Apply
    await viewReady("trend");
    const zone = demoDirectory.enterprise.time_zone!;
    // It stayed without currency, in UTC, until a reload.
    await expect.poll(() => page.textContent("#enterprise")).toContain("CNY");
    expect(await page.textContent("#enterprise")).toContain(zone);
    expect(await page.inputValue("#time-zone")).toBe(zone);
  });

  test("an enterprise without departments: the Departments view says so instead of failing", async () => {
    await signIn(edgeToken);
    await page.click('nav a[data-view="departments"]');
    await viewReady("departments");
    expect(await page.textContent("#no-departments")).toBe("This enterprise has no departments: its members' usage is in Daily trend and Top members.");
    expect(await page.isHidden("#error")).toBe(true);
  });

  test("an address with a malformed %-escape is a page that does not exist, not a failure of the console", async () => {
    await signIn(token);
    await page.goto(`${service.baseUrl}/console#/member/%E0%A4%A`);
    await viewReady("not-found");
    expect(await page.textContent("#not-found")).toBe("This address is not a page of the console (it holds a malformed %-escape): choose a view above.");
    expect(await page.isHidden("#error")).toBe(true);
    expect(await page.locator('nav a[aria-current="page"]').count()).toBe(0);
    await page.click('nav a[data-view="top"]');
    await viewReady("top");
  });

  test("a member is shown by what the address names, user_id or e-mail, though a user_id may hold an @", async () => {
    await signIn(edgeToken);
    const title = () => page.textContent("#view[data-state=ready] #member-title");
    await page.click('nav a[data-view="top"]');
    await viewReady("top");
    await page.click('#top-members a[href="#/member/user/bob%40edge.example"]');
    await expect.poll(title).toBe("bob@edge.example · alice@edge.example");
    expect(JSON.parse(seen.at(-1)!.body!)).toMatchObject({ user_ids: ["bob@edge.example"] });
    expect(JSON.parse(seen.at(-1)!.body!)).not.toHaveProperty("emails");

    // Typed in: one member's user_id and another's e-mail are both offered.
    await page.fill("#member-input", "bob@edge.example");
    await page.click(".member-form button");
    expect(await page.textContent("#member-choice")).toBe("bob@edge.example is a user_id and an e-mail: show the member with user_id bob@edge.example or the member with e-mail bob@edge.example.");
    await page.click('#member-choice a[href="#/member/email/bob%40edge.example"]');
    await expect.poll(title).toBe("u2 · bob@edge.example");
    // An e-mail alone, and an old address without user/ or email/, move to the member's own address.
    await page.fill("#member-input", "alice@edge.example");
    await page.click(".member-form button");
    await expect.poll(title).toBe("bob@edge.example · alice@edge.example");
    expect(await page.evaluate("location.hash")).toBe("#/member/email/alice%40edge.example");
    await page.goto(`${service.baseUrl}/console#/member/u2`);
    await expect.poll(title).toBe("u2 · bob@edge.example");
    expect(await page.evaluate("location.hash")).toBe("#/member/user/u2");
    await page.goto(`${service.baseUrl}/console#/member/user/carol`);
    await expect.poll(() => page.textContent("#member-missing")).toBe("No member with the user_id carol in this enterprise.");
    // An e-mail longer than any user_id can be is looked up as an e-mail alone (as a user_id too, the API would refuse the lookup).
    await page.fill("#member-input", LONG_EMAIL);
    await page.click(".member-form button");
    await expect.poll(() => page.evaluate("location.hash")).toBe(`#/member/email/${encodeURIComponent(LONG_EMAIL)}`);
    await viewReady("member");
    expect(await page.isHidden("#error")).toBe(true);
    // Longer than an e-mail may be: no member, not the API's refusal of the lookup.
    const tooLong = `${"x".repeat(300)}@${"y".repeat(20)}.example`;
    await page.fill("#member-input", tooLong);
    await page.click(".member-form button");
    await expect.poll(() => page.textContent("#member-missing")).toBe(`No member has the user_id or e-mail ${tooLong} in this enterprise.`);
    expect(await page.isHidden("#error")).toBe(true);
  });

  test("signing out and in again: the earlier session's late answers do not touch the new session's page", async () => {
    const earlier = await service.token(["statistics:read", "departments:read"], "scale");
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const settled: Promise<unknown>[] = [];
    await page.route("**/openapi/v1/**", async (route) => {
      if (route.request().headers().authorization !== `Bearer ${earlier}`) return route.continue();
      await held; // a slow link for the earlier session only
      settled.push(route.request().response().catch(() => undefined));
      return route.continue().catch(() => {}); // the page may have given up on it
    });
    try {
      await openSignedOut();
      await page.fill("#token-input", earlier);
      await page.click("#token-form button[type=submit]");
      await page.click("#sign-out");
      await page.fill("#token-input", token);
      await page.click("#token-form button[type=submit]");
      await viewReady("trend");
      release();
      await expect.poll(() => settled.length).toBe(2); // the earlier session's two first calls
      await Promise.all(settled);
      await page.evaluate("new Promise((resolve) => setTimeout(resolve, 100))"); // time for the page to read them
    } finally {
      release();
      await page.unroute("**/openapi/v1/**");
    }
    expect(await page.textContent("#enterprise")).toBe("Demo Corp · CNY · Asia/Shanghai");
    expect(await page.inputValue("#time-zone")).toBe("Asia/Shanghai");
    expect(await page.getAttribute("#view", "data-state")).toBe("ready");
  });

  test("the range controls refuse what the API would (an offset for a zone, a day the zone skipped, a start before 1970) and take 9999-12-31", async () => {
    await signIn(token);
    const message = () => page.textContent("#range-message");
    const lastReport = () => JSON.parse(seen.filter((s) => s.url.endsWith("/usage-report")).at(-1)!.body!) as Record<string, unknown>;
    const uncaught = await uncaughtDuring(async () => {
      for (const zone of ["+05:45", "-00:00", "Factory"]) { // Chromium's Intl takes them; the API does not
        await page.fill("#time-zone", zone);
        expect(await message()).toBe(`"${zone}" is not an IANA time zone (for example Asia/Shanghai or UTC).`);
        expect([await page.isDisabled("#apply"), await page.isDisabled("#download")]).toEqual([true, true]);
      }

      await page.fill("#time-zone", "Pacific/Apia");
      await page.fill("#from", "2011-12-30");
      await page.fill("#to", "2011-12-30");
      expect(await message()).toBe("Pacific/Apia skipped 2011-12-30 (its clocks jumped over it): choose other dates.");
      expect(await page.isDisabled("#apply")).toBe(true);
      await page.fill("#to", "2011-12-31");
      await page.selectOption("#granularity", "hour");
      expect(await message()).toBe("");
      await page.click("#apply");
      await viewReady("trend");
      // From the jump (2011-12-29 24:00 at -10, 2011-12-31 00:00 at +14) to 2012-01-01 00:00 at +14.
      expect(lastReport()).toMatchObject({ start_time: 1325239200, end_time: 1325325600 });
      expect(await page.textContent("#trend-table .position")).toBe("rows 1–24 of 24 · page 1 of 1");

      await page.fill("#time-zone", "UTC");
      await page.selectOption("#granularity", "day");
      await page.fill("#from", "1969-12-31");
      expect(await message()).toBe("1969-12-31 in UTC starts before 1970-01-01 00:00 UTC, where the API's reports begin: choose a later start date.");
      expect([await page.isDisabled("#apply"), await page.isDisabled("#download")]).toEqual([true, true]);
      await page.fill("#from", "0050-06-01");
      expect(await message()).toBe("0050-06-01 in UTC starts before 1970-01-01 00:00 UTC, where the API's reports begin: choose a later start date.");

      await page.fill("#to", "9999-12-31");
      await page.fill("#from", "9999-12-30");
      expect(await message()).toBe("");
      await page.click("#apply");
      await viewReady("trend");
      expect(lastReport()).toMatchObject({ start_time: 253402128000, end_time: 253402300800 });
      expect(await page.locator("#trend-table tbody tr").count()).toBe(2);
    });
    expect(uncaught).toEqual([]);
    expect(await page.isHidden("#error")).toBe(true);
  });

  test("a count past 2^53 has its digits grouped like the others, exactly", async () => {
    await signIn(edgeToken);
    expect(await page.textContent('#trend-summary [data-figure="input_tokens"]')).toBe(EDGE_INPUT_TOKENS);
    expect(await page.textContent('#trend-summary [data-figure="events"]')).toBe("9,102");
    const day = page.locator("#trend-table tbody tr", { hasText: EDGE_INPUT_TOKENS });
    expect(await day.locator("td").nth(1).textContent()).toBe("9,102");
  });
});
