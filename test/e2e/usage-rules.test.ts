// End to end: the member model usage rules of docs/api-rules.md (the
// query) and the ingestion of usage events (RecordUsageEvents), against the real service over plain
// fetch (REST) and, for a representative subset, the Connect client (JSON and binary).
//
// Each test that records usage gets a tenant of its own (a fresh enterprise imported here), so no two
// tests see each other's figures. The acme/globex fixtures are used for the member-list rules, over a
// window (EMPTY) in which they never have usage, and for currency and tenancy.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorDetailSchema } from "../../gen/enterprise_admin/v1/errors_pb.js";
import { UsageService, type MemberUsage } from "../../gen/enterprise_admin/v1/usage_pb.js";
import type { Permission } from "../../src/domain/permissions.js";
import { MAX_EVENT_MICROS, MAX_EVENT_TOKENS } from "../../src/domain/usage-event.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { recordUsage } from "../../src/operations/record-usage.js";
import { UsageRepository } from "../../src/storage/usage-repository.js";
import { dialects } from "../helpers/databases.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { jsonInt, parseJsonBig, sixDecimals } from "../helpers/usage-reference.js";

const QUERY = "/openapi/v1/statistics/user-model-usage";
const RECORD = "/openapi/v1/usage/events/batch-record";
const DAY = 86_400;
const HOUR = 3_600;
/** 2024-10-28T00:00:00Z: a UTC day boundary. */
const T0 = 1_730_073_600;
/** The per-event ceilings the API enforces (usage-event.ts), as JSON values. */
const TOKEN_CAP = Number(MAX_EVENT_TOKENS);
const AMOUNT_CAP = sixDecimals(MAX_EVENT_MICROS);
/** A window in which acme and globex never have usage. */
const EMPTY = { start_time: T0 - 30 * DAY, end_time: T0 - 29 * DAY };

type Member = { user_id: string; email: string; account_type: 1 | 2 };
const LI_LEI: Member = { user_id: "7001", email: "li.lei@acme.example", account_type: 1 };
const HAN: Member = { user_id: "7002", email: "Han.Meimei@acme.example", account_type: 2 };
const HOMER: Member = { user_id: "8001", email: "homer@globex.example", account_type: 1 };

interface Reply {
  status: number;
  text: string;
  json: any;
}

interface Tenant {
  id: string;
  currency: "CNY" | "USD";
  token: string;
  members: Member[];
}

const success = (data: unknown) => ({ code: 0, message: "success", request_id: expect.any(String), data });
const failure = (code: number, message: unknown) => ({ code, message, request_id: expect.any(String), data: null });
const answer = (items: unknown[], notFoundUserIds: string[] = [], notFoundEmails: string[] = []) =>
  success({ items, not_found_user_ids: notFoundUserIds, not_found_emails: notFoundEmails });
const item = (member: Member, modelUsage: unknown[] = []) => ({ ...member, model_usage: modelUsage, former_member: false });
const escape = (w: string) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
/** A message that names these words in this order. */
const naming = (...words: string[]) => expect.stringMatching(new RegExp(words.map(escape).join(".*")));

/** One model_usage entry; tokens as number or bigint (bigint past 15 digits, as parseJsonBig reads them). */
function usage(name: string, type: string, source: string, input: number | bigint, output: number | bigint,
  basic: string, payGo: string, total: string, currency = "CNY") {
  return {
    model_name: name, model_type: type, model_source: source,
    usage: { input_tokens: input, output_tokens: output },
    amount: { basic_amount: basic, pay_go_amount: payGo, total_amount: total, currency },
  };
}

let eventSeq = 0;
/** A valid event; `over` replaces or adds fields (undefined removes one). */
function ev(userId: string | number, timestamp: number, over: Record<string, unknown> = {}): Record<string, unknown> {
  const event: Record<string, unknown> = {
    event_id: `ev-${++eventSeq}`, user_id: userId, model_name: "model-a", model_type: "Chat", model_source: "Builtin",
    timestamp, input_tokens: 1, output_tokens: 0, basic_amount: "0", pay_go_amount: "0", ...over,
  };
  for (const key of Object.keys(event)) if (event[key] === undefined) delete event[key];
  return event;
}

describe.each(dialects)("usage rules (%s)", (dialect) => {
  let svc: TestService;
  let acmeToken: string;
  let globexToken: string;
  let tenants = 0;

  beforeAll(async () => {
    svc = await startTestService(dialect);
    acmeToken = await svc.token();
    globexToken = await svc.token(undefined, "globex");
  });

  afterAll(async () => {
    await svc?.close();
  });

  /** A fresh enterprise with `count` members (no departments), and a token with every permission. */
  async function tenant(currency: "CNY" | "USD" = "CNY", count = 4): Promise<Tenant> {
    const n = ++tenants;
    const id = `usage-${dialect}-${n}`;
    const members: Member[] = Array.from({ length: count }, (_, i) => ({
      user_id: `${n}0${i + 1}`, email: `Member.${i + 1}@T${n}.example`, account_type: (i % 2 + 1) as 1 | 2,
    }));
    await importDirectory(svc.database, {
      enterprise: { enterprise_id: id, name: `Tenant ${n}`, currency },
      departments: [],
      members: members.map((m) => ({ ...m, department_ids: [] })),
    });
    return { id, currency, token: await svc.token(undefined, id), members };
  }

  async function post(path: string, body: unknown, token: string | null): Promise<Reply> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (token !== null) headers.authorization = `Bearer ${token}`;
    const res = await fetch(svc.baseUrl + path, { method: "POST", headers, body: typeof body === "string" ? body : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, text, json: parseJsonBig(text) };
  }

  const query = (token: string | null, body: unknown) => post(QUERY, body, token);
  const record = (token: string | null, events: unknown[]) => post(RECORD, { events }, token);

  async function mustRecord(token: string, events: unknown[]): Promise<{ recorded: number; duplicates: number }> {
    const reply = await record(token, events);
    expect(reply.json).toStrictEqual(success({ recorded: expect.any(Number), duplicates: expect.any(Number) }));
    expect(reply.status).toBe(200);
    return reply.json.data;
  }

  /**
   * Records events through the real ingestion path just below the API (recordUsage), without the
   * API's per-event ceilings: how the tests reach sums past 2^53 in a few events.
   */
  async function seed(enterpriseId: string, events: Array<Record<string, unknown>>): Promise<{ recorded: number; duplicates: number }> {
    const repository = new UsageRepository(svc.database);
    return recordUsage(repository, enterpriseId, events.map((e, i) => ({
      where: `seed[${i}]`,
      event: {
        eventId: String(e.event_id), userId: String(e.user_id), modelName: String(e.model_name), modelType: String(e.model_type),
        modelSource: String(e.model_source), timestamp: Number(e.timestamp), inputTokens: BigInt(e.input_tokens as number | string),
        outputTokens: BigInt(e.output_tokens as number | string), basicMicros: 0n, payGoMicros: 0n,
      },
    })));
  }

  /** The usage of one member over a window, as the REST answer's model_usage. */
  async function modelUsageOf(t: Tenant, member: Member, start: number, end: number): Promise<unknown[]> {
    const reply = await query(t.token, { start_time: start, end_time: end, user_ids: [member.user_id] });
    expect(reply.status).toBe(200);
    expect(reply.json.data.items).toHaveLength(1);
    return reply.json.data.items[0].model_usage;
  }

  async function expectFailure(reply: Reply, status: number, code: number, message: unknown): Promise<void> {
    expect(reply.json).toStrictEqual(failure(code, message));
    expect(reply.status).toBe(status);
  }

  // ---------------------------------------------------------------------------------------------
  describe("the window", () => {
    const windows: Array<[string, number, number]> = [
      ["inside one day (raw events only)", T0 + 3 * HOUR, T0 + 20 * HOUR],
      ["on whole UTC days", T0 + DAY, T0 + 3 * DAY],
      ["cutting through its first and last day (running totals and raw events)", T0 + DAY + 5 * HOUR, T0 + 4 * DAY + 7 * HOUR],
      ["starting on a day boundary, ending inside a later day", T0 + DAY, T0 + 2 * DAY + 1],
      ["starting inside a day, ending on a later day boundary", T0 + DAY - 1, T0 + 3 * DAY],
      ["one second wide, ending on a day boundary", T0 + 2 * DAY - 1, T0 + 2 * DAY],
      ["one second wide, starting on a day boundary", T0 + 2 * DAY, T0 + 2 * DAY + 1],
    ];

    it.each(windows)("counts an event exactly at start_time and none exactly at end_time: %s", async (_label, start, end) => {
      const t = await tenant();
      const m = t.members[0]!;
      // Each event's input_tokens is a distinct power of two, so the sum tells exactly which counted.
      const at = [start - 1, start, start + 1, end - 1, end, end + 1];
      await mustRecord(t.token, at.map((ts, i) => ev(m.user_id, ts, { input_tokens: 2 ** i, basic_amount: `0.00000${i + 1}` })));
      const counted = at.map((ts, i) => ({ ts, i })).filter(({ ts }) => ts >= start && ts < end);
      const input = counted.reduce((s, { i }) => s + 2 ** i, 0);
      const basic = `0.0000${String(counted.reduce((s, { i }) => s + i + 1, 0)).padStart(2, "0")}`;
      expect(counted.map(({ i }) => i)).toContain(1); // the event at start_time
      expect(counted.map(({ i }) => i)).not.toContain(4); // the event at end_time
      const reply = await query(t.token, { start_time: start, end_time: end, user_ids: [m.user_id] });
      expect(reply.json).toStrictEqual(answer([item(m, [usage("model-a", "Chat", "Builtin", input, 0, basic, "0.000000", basic)])]));
    });

    it("accepts a span of exactly 180 days and counts the events at both of its ends", async () => {
      const t = await tenant();
      const m = t.members[0]!;
      const start = T0 - 100 * DAY + 5 * HOUR;
      const end = start + 180 * DAY;
      await mustRecord(t.token, [
        ev(m.user_id, start - 1, { input_tokens: 1 }),
        ev(m.user_id, start, { input_tokens: 2 }),
        ev(m.user_id, start + 90 * DAY, { input_tokens: 4 }),
        ev(m.user_id, end - 1, { input_tokens: 8 }),
        ev(m.user_id, end, { input_tokens: 16 }),
      ]);
      const reply = await query(t.token, { start_time: start, end_time: end, user_ids: [m.user_id] });
      expect(reply.status).toBe(200);
      expect(reply.json).toStrictEqual(answer([item(m, [usage("model-a", "Chat", "Builtin", 14, 0, "0.000000", "0.000000", "0.000000")])]));
    });

    it("rejects 180 days + 1 s with 4001 naming the limit", async () => {
      const reply = await query(acmeToken, { start_time: T0, end_time: T0 + 180 * DAY + 1, user_ids: ["7001"] });
      await expectFailure(reply, 400, 4001, "end_time - start_time: 15552001 seconds > 15552000 (180 days)");
    });

    it("rejects an end_time past 2^53 - 1 with 4001 naming the field and the limit", async () => {
      const reply = await query(acmeToken, { start_time: "9223372036854775000", end_time: "9223372036854775807", user_ids: ["7001"] });
      await expectFailure(reply, 400, 4001, "end_time: 9223372036854775807 > 9007199254740991 (2^53 - 1, the largest accepted)");
    });

    it("rejects a start_time of 100,000 digits naming its length, not echoing it", async () => {
      const digits = "1".repeat(100_000);
      for (const body of [`{"start_time":${digits},"end_time":1,"user_ids":["7001"]}`, `{"start_time":"${digits}","end_time":1,"user_ids":["7001"]}`]) {
        const reply = await query(acmeToken, body);
        await expectFailure(reply, 400, 4001, `start_time: ${"1".repeat(512)}… (100000 characters) is out of range -9223372036854775808 to 9223372036854775807`);
      }
    });

    it.each([
      ["end_time equal to start_time", T0, T0],
      ["end_time before start_time", T0 + 1, T0],
    ])("rejects %s with 4001", async (_label, start, end) => {
      const reply = await query(acmeToken, { start_time: start, end_time: end, user_ids: ["7001"] });
      await expectFailure(reply, 400, 4001, `end_time must be after start_time (start_time ${start}, end_time ${end})`);
    });

    it("accepts start_time and end_time as numeric strings", async () => {
      const reply = await query(acmeToken, { start_time: String(EMPTY.start_time), end_time: String(EMPTY.end_time), user_ids: ["7001"] });
      expect(reply.json).toStrictEqual(answer([item(LI_LEI)]));
    });
  });

  // ---------------------------------------------------------------------------------------------
  describe("the members named", () => {
    it.each([
      ["neither user_ids nor emails", {}],
      ["both empty", { user_ids: [], emails: [] }],
      ["only an empty user_ids", { user_ids: [] }],
      ["only an empty emails", { emails: [] }],
    ])("rejects %s with 4001", async (_label, members) => {
      const reply = await query(acmeToken, { ...EMPTY, ...members });
      await expectFailure(reply, 400, 4001, "user_ids, emails: at least one of them must name a member");
    });

    it("de-duplicates within user_ids (7001 and \"7001\" alike) and within emails case-insensitively", async () => {
      const reply = await query(acmeToken, {
        ...EMPTY,
        user_ids: ["7001", 7001, "x-1", "7001", "x-1"],
        emails: ["Nobody@Acme.Example", "HAN.MEIMEI@acme.example", "nobody@acme.example", "han.meimei@ACME.EXAMPLE"],
      });
      expect(reply.status).toBe(200);
      expect(reply.json).toStrictEqual(answer([item(LI_LEI), item(HAN)], ["x-1"], ["Nobody@Acme.Example"]));
    });

    it("accepts 100 unique entries after de-duplication", async () => {
      const ids = ["7001", ...Array.from({ length: 59 }, (_, i) => `u-${i + 1}`)];
      const emails = ["han.meimei@acme.example", ...Array.from({ length: 39 }, (_, i) => `n${i + 1}@nowhere.example`)];
      const reply = await query(acmeToken, { ...EMPTY, user_ids: ids, emails });
      expect(reply.status).toBe(200);
      expect(reply.json).toStrictEqual(answer([item(LI_LEI), item(HAN)], ids.slice(1), emails.slice(1)));
    });

    it.each([
      ["101 user_ids", 101, 0],
      ["101 emails", 0, 101],
      ["61 user_ids and 40 emails", 61, 40],
    ])("rejects %s with 4001 naming 101 > 100", async (_label, idCount, emailCount) => {
      const reply = await query(acmeToken, {
        ...EMPTY,
        user_ids: Array.from({ length: idCount }, (_, i) => `u-${i}`),
        emails: Array.from({ length: emailCount }, (_, i) => `n${i}@nowhere.example`),
      });
      await expectFailure(reply, 400, 4001, "user_ids plus emails after de-duplication: 101 > 100");
    });

    it("accepts 150 entries whose duplicates collapse to 100", async () => {
      const ids = ["7001", ...Array.from({ length: 59 }, (_, i) => String(900_001 + i))]; // 60 unique
      const idsSent = [...ids, 7001, ...ids.slice(1, 30).map(Number)]; // + 30 repeats, as integers
      const emails = ["Han.Meimei@acme.example", ...Array.from({ length: 39 }, (_, i) => `n${i + 1}@nowhere.example`)]; // 40 unique
      const emailsSent = [...emails, ...emails.slice(0, 20).map((e) => e.toUpperCase())]; // + 20 repeats in another case
      expect(idsSent.length + emailsSent.length).toBe(150);
      const reply = await query(acmeToken, { ...EMPTY, user_ids: idsSent, emails: emailsSent });
      expect(reply.status).toBe(200);
      expect(reply.json).toStrictEqual(answer([item(LI_LEI), item(HAN)], ids.slice(1), emails.slice(1)));
    });

    it("counts a member named by id and by e-mail as two, but returns it once", async () => {
      const unknown = Array.from({ length: 99 }, (_, i) => `u-${i + 1}`);
      // 1 + 98 ids + 1 e-mail = 100: passes, and 7001 appears once.
      const ok = await query(acmeToken, { ...EMPTY, user_ids: ["7001", ...unknown.slice(0, 98)], emails: ["LI.LEI@acme.example"] });
      expect(ok.status).toBe(200);
      expect(ok.json).toStrictEqual(answer([item(LI_LEI)], unknown.slice(0, 98)));
      // 1 + 99 ids + 1 e-mail = 101 entries for 100 distinct people: rejected.
      const tooMany = await query(acmeToken, { ...EMPTY, user_ids: ["7001", ...unknown], emails: ["LI.LEI@acme.example"] });
      await expectFailure(tooMany, 400, 4001, "user_ids plus emails after de-duplication: 101 > 100");
    });

    it("lists items in order of first mention: user_ids first, then emails", async () => {
      const t = await tenant("CNY", 4);
      const [m1, m2, m3, m4] = t.members as [Member, Member, Member, Member];
      const reply = await query(t.token, {
        ...EMPTY,
        user_ids: [m3.user_id, "zz", m1.user_id, m3.user_id],
        emails: [m4.email.toUpperCase(), m1.email, m2.email.toLowerCase(), m3.email],
      });
      expect(reply.json).toStrictEqual(answer([item(m3), item(m1), item(m4), item(m2)], ["zz"]));
      const emailFirst = await query(t.token, { ...EMPTY, emails: [m2.email, m1.email], user_ids: [m1.user_id] });
      expect(emailFirst.json).toStrictEqual(answer([item(m1), item(m2)]));
    });

    it("accepts user_ids as JSON integers and as strings (an integer is read as its decimal string)", async () => {
      // 9007199254740993 is sent as a bare JSON number: beyond 2^53, it must still be read exactly.
      const body = JSON.stringify({ ...EMPTY, user_ids: [7001, "7002", 424242, "BIG"] }).replace('"BIG"', "9007199254740993");
      const reply = await query(acmeToken, body);
      expect(reply.status).toBe(200);
      expect(reply.json).toStrictEqual(answer([item(LI_LEI), item(HAN)], ["424242", "9007199254740993"]));
    });

    it("matches emails case-insensitively and returns the member's stored spelling", async () => {
      const reply = await query(acmeToken, { ...EMPTY, emails: ["HAN.MEIMEI@ACME.EXAMPLE", "Li.Lei@Acme.Example"] });
      expect(reply.json).toStrictEqual(answer([item(HAN), item(LI_LEI)]));
    });

    it("lists unknown ids and e-mails in not_found exactly as sent, once each", async () => {
      const reply = await query(acmeToken, {
        ...EMPTY,
        user_ids: [" 7001", "7001 ", "07001", "abc", "ABC", "abc"],
        emails: [" li.lei@acme.example", "li.lei@acme.example ", "Nobody@Acme.Example", "li.lei@acme", "NOBODY@acme.example"],
      });
      expect(reply.status).toBe(200);
      expect(reply.json).toStrictEqual(answer([], [" 7001", "7001 ", "07001", "abc", "ABC"],
        [" li.lei@acme.example", "li.lei@acme.example ", "Nobody@Acme.Example", "li.lei@acme"]));
    });

    it('gives a known member without usage "model_usage": [] and prints empty not_found lists', async () => {
      const reply = await query(acmeToken, { ...EMPTY, user_ids: ["7002"] });
      expect(reply.json).toStrictEqual(answer([item(HAN)]));
      expect(reply.text).toContain('"data":{"items":[{"user_id":"7002","email":"Han.Meimei@acme.example","account_type":2,"model_usage":[],"former_member":false}],"not_found_user_ids":[],"not_found_emails":[]}');
    });

    it("treats another enterprise's member as unknown, even one with usage in the window", async () => {
      const window = { start_time: T0 + 60 * DAY, end_time: T0 + 61 * DAY };
      await mustRecord(globexToken, [ev("8001", window.start_time + 10, { basic_amount: "1.5" })]);
      const fromAcme = await query(acmeToken, { ...window, user_ids: ["8001"], emails: ["homer@globex.example"] });
      expect(fromAcme.json).toStrictEqual(answer([], ["8001"], ["homer@globex.example"]));
      const fromGlobex = await query(globexToken, { ...window, user_ids: ["8001", "7001"], emails: ["li.lei@acme.example"] });
      expect(fromGlobex.json).toStrictEqual(answer(
        [item(HOMER, [usage("model-a", "Chat", "Builtin", 1, 0, "1.500000", "0.000000", "1.500000", "USD")])],
        ["7001"], ["li.lei@acme.example"]));
    });
  });

  // ---------------------------------------------------------------------------------------------
  describe("the figures", () => {
    it("groups by (model_name, model_type, model_source) sorted in code point order", async () => {
      const t = await tenant();
      const m = t.members[0]!;
      const names = ["\u{1F600}", "zeta", "acme", "Zeta", "\u00C9mile", "a-b", "\uFF5E", "a"];
      const events = [
        ...names.map((name, i) => ev(m.user_id, T0 + i * 7 * HOUR, { model_name: name, input_tokens: 1 })),
        ev(m.user_id, T0 + 5 * HOUR, { model_name: "Zeta", model_type: "Chat", model_source: "Custom", input_tokens: 2 }),
        ev(m.user_id, T0 + 30 * HOUR, { model_name: "Zeta", model_type: "CUE", model_source: "Custom", input_tokens: 3 }),
        ev(m.user_id, T0 + 50 * HOUR, { model_name: "Zeta", model_type: "CUE", model_source: "Builtin", input_tokens: 4 }),
        ev(m.user_id, T0 + 51 * HOUR, { model_name: "Zeta", model_type: "CUE", model_source: "Builtin", input_tokens: 5 }),
        ev(m.user_id, T0 + 2 * DAY + 1, { model_name: "acme", input_tokens: 6 }),
      ];
      await mustRecord(t.token, events.slice(0, 6));
      await mustRecord(t.token, events.slice(6));
      const zero = ["0.000000", "0.000000", "0.000000"] as const;
      const reply = await query(t.token, { start_time: T0 - HOUR, end_time: T0 + 3 * DAY + HOUR, user_ids: [m.user_id] });
      expect(reply.json).toStrictEqual(answer([item(m, [
        // "CUE" < "Chat" ('U' 0x55 < 'h' 0x68), "Builtin" < "Custom", "Zeta" < "a" < "a-b" < "acme" < "zeta" < "Émile" < "～" < "😀".
        usage("Zeta", "CUE", "Builtin", 9, 0, ...zero),
        usage("Zeta", "CUE", "Custom", 3, 0, ...zero),
        usage("Zeta", "Chat", "Builtin", 1, 0, ...zero),
        usage("Zeta", "Chat", "Custom", 2, 0, ...zero),
        usage("a", "Chat", "Builtin", 1, 0, ...zero),
        usage("a-b", "Chat", "Builtin", 1, 0, ...zero),
        usage("acme", "Chat", "Builtin", 7, 0, ...zero),
        usage("zeta", "Chat", "Builtin", 1, 0, ...zero),
        usage("\u00C9mile", "Chat", "Builtin", 1, 0, ...zero),
        usage("\uFF5E", "Chat", "Builtin", 1, 0, ...zero),
        usage("\u{1F600}", "Chat", "Builtin", 1, 0, ...zero),
      ])]));
    });

    it("sums tokens exactly past 2^53 and prints them as bare JSON numbers", async () => {
      // The API caps one event at MAX_EVENT_TOKENS, so these figures are seeded below it (recordUsage);
      // the sums are read through REST. Spread over four days: running totals and raw events both count.
      const t = await tenant();
      const m = t.members[1]!;
      const P15 = 1_000_000_000_000_000;
      // input: 9 x 10^15 + 7199254740993 = 9007199254740993 (2^53 + 1);
      // output: 18 x 10^15 + 14398509481985 = 18014398509481985 (2^54 + 1).
      const events = Array.from({ length: 19 }, (_, i) => ev(m.user_id, T0 + i * 5 * HOUR, {
        model_name: "big",
        input_tokens: i < 9 ? P15 : i === 9 ? 7_199_254_740_993 : 0,
        output_tokens: i < 18 ? P15 : 14_398_509_481_985,
      }));
      expect(await seed(t.id, events.slice(0, 10))).toStrictEqual({ recorded: 10, duplicates: 0 });
      expect(await seed(t.id, events.slice(10))).toStrictEqual({ recorded: 9, duplicates: 0 });
      // And some through the API, at its ceiling, on top.
      expect(await mustRecord(t.token, [
        ev(m.user_id, T0 + 2 * HOUR, { model_name: "big", input_tokens: TOKEN_CAP, output_tokens: String(TOKEN_CAP) }),
        ev(m.user_id, T0 + DAY + 2 * HOUR, { model_name: "big", input_tokens: String(TOKEN_CAP), output_tokens: 0 }),
      ])).toStrictEqual({ recorded: 2, duplicates: 0 });
      const input = 9_007_199_254_740_993n + 2n * MAX_EVENT_TOKENS;
      const output = 18_014_398_509_481_985n + MAX_EVENT_TOKENS;
      const reply = await query(t.token, { start_time: T0 - HOUR, end_time: T0 + 4 * DAY + 1, user_ids: [m.user_id] });
      expect(reply.json).toStrictEqual(answer([item(m, [
        usage("big", "Chat", "Builtin", jsonInt(input), jsonInt(output), "0.000000", "0.000000", "0.000000"),
      ])]));
      expect(reply.text).toContain(`"usage":{"input_tokens":${input},"output_tokens":${output}}`);
    });

    it("sums amounts exactly as 6-decimal strings, total = basic + pay_go", async () => {
      const BELOW_CAP = sixDecimals(MAX_EVENT_MICROS - 1n); // e.g. 999999.999999
      const t = await tenant();
      const m = t.members[0]!;
      await mustRecord(t.token, [
        ev(m.user_id, T0 + HOUR, { model_name: "m-small", basic_amount: "0.1", pay_go_amount: "0.000001" }),
        ev(m.user_id, T0 + DAY + HOUR, { model_name: "m-small", basic_amount: "0.2", pay_go_amount: "1" }),
        // At the per-event ceiling (AMOUNT_CAP, written three ways) and one micro-unit below it.
        ev(m.user_id, T0 + HOUR, { model_name: "m-big", basic_amount: BELOW_CAP, pay_go_amount: AMOUNT_CAP.replace(/\.0+$/, "") }),
        ev(m.user_id, T0 + 2 * HOUR, { model_name: "m-big", basic_amount: BELOW_CAP, pay_go_amount: AMOUNT_CAP }),
        ev(m.user_id, T0 + DAY + 2 * HOUR, { model_name: "m-big", basic_amount: BELOW_CAP, pay_go_amount: AMOUNT_CAP.replace(/0+$/, "0") }),
        ...Array.from({ length: 7 }, (_, i) => ev(m.user_id, T0 + i * HOUR, { model_name: "m-micro", pay_go_amount: "0.000001" })),
        ev(m.user_id, T0 + 3 * HOUR, { model_name: "m-forms", basic_amount: "12", pay_go_amount: "0.10" }),
        ev(m.user_id, T0 + 4 * HOUR, { model_name: "m-forms", basic_amount: "12.5", pay_go_amount: "" }),
      ]);
      const reply = await query(t.token, { start_time: T0, end_time: T0 + 2 * DAY, user_ids: [m.user_id] });
      expect(reply.json).toStrictEqual(answer([item(m, [
        usage("m-big", "Chat", "Builtin", 3, 0, sixDecimals(3n * (MAX_EVENT_MICROS - 1n)), sixDecimals(3n * MAX_EVENT_MICROS), sixDecimals(6n * MAX_EVENT_MICROS - 3n)),
        usage("m-forms", "Chat", "Builtin", 2, 0, "24.500000", "0.100000", "24.600000"),
        usage("m-micro", "Chat", "Builtin", 7, 0, "0.000000", "0.000007", "0.000007"),
        usage("m-small", "Chat", "Builtin", 2, 0, "0.300000", "1.000001", "1.300001"),
      ])]));
    });

    it("reports amounts in the enterprise's currency: CNY for acme, USD for globex", async () => {
      const window = { start_time: T0 + 70 * DAY, end_time: T0 + 71 * DAY };
      await mustRecord(acmeToken, [ev("7001", window.start_time, { model_name: "cur", basic_amount: "2", pay_go_amount: "0.5" })]);
      await mustRecord(globexToken, [ev("8001", window.start_time, { model_name: "cur", basic_amount: "2", pay_go_amount: "0.5" })]);
      const acme = await query(acmeToken, { ...window, user_ids: ["7001"] });
      expect(acme.json).toStrictEqual(answer([item(LI_LEI, [usage("cur", "Chat", "Builtin", 1, 0, "2.000000", "0.500000", "2.500000", "CNY")])]));
      const globex = await query(globexToken, { ...window, emails: ["HOMER@globex.example"] });
      expect(globex.json).toStrictEqual(answer([item(HOMER, [usage("cur", "Chat", "Builtin", 1, 0, "2.000000", "0.500000", "2.500000", "USD")])]));
      const usd = await tenant("USD", 1);
      await mustRecord(usd.token, [ev(usd.members[0]!.user_id, window.start_time, { model_name: "cur", model_source: "Custom" })]);
      expect(await modelUsageOf(usd, usd.members[0]!, window.start_time, window.end_time)).toStrictEqual([
        usage("cur", "Chat", "Custom", 1, 0, "0.000000", "0.000000", "0.000000", "USD"),
      ]);
    });

    it('gives a Custom model all amounts "0.000000" (zero, empty or absent amounts on its events)', async () => {
      const t = await tenant();
      const m = t.members[0]!;
      await mustRecord(t.token, [
        ev(m.user_id, T0 + HOUR, { model_name: "mine", model_source: "Custom", input_tokens: 100, output_tokens: 7, basic_amount: "0", pay_go_amount: "0.000000" }),
        ev(m.user_id, T0 + DAY + HOUR, { model_name: "mine", model_source: "Custom", input_tokens: 50, output_tokens: 3, basic_amount: "", pay_go_amount: undefined }),
        ev(m.user_id, T0 + 2 * HOUR, { model_name: "mine", model_type: "CUE", model_source: "Custom", input_tokens: 5, basic_amount: undefined, pay_go_amount: undefined }),
        ev(m.user_id, T0 + 3 * HOUR, { model_name: "mine", model_source: "Builtin", input_tokens: 1, basic_amount: "0.25", pay_go_amount: "0.5" }),
      ]);
      const reply = await query(t.token, { start_time: T0, end_time: T0 + 2 * DAY, user_ids: [m.user_id] });
      expect(reply.json).toStrictEqual(answer([item(m, [
        usage("mine", "CUE", "Custom", 5, 0, "0.000000", "0.000000", "0.000000"),
        usage("mine", "Chat", "Builtin", 1, 0, "0.250000", "0.500000", "0.750000"),
        usage("mine", "Chat", "Custom", 150, 10, "0.000000", "0.000000", "0.000000"),
      ])]));
    });

    it("prints every documented field, zero values included", async () => {
      const t = await tenant();
      const m = t.members[1]!; // account_type 2
      await mustRecord(t.token, [ev(m.user_id, T0 + HOUR, { model_name: "nil", model_source: "Custom", input_tokens: 0, output_tokens: 0 })]);
      const reply = await query(t.token, { start_time: T0, end_time: T0 + DAY, user_ids: [m.user_id] });
      expect(reply.text).toContain(`"data":{"items":[{"user_id":"${m.user_id}","email":"${m.email}","account_type":2,"model_usage":[`
        + '{"model_name":"nil","model_type":"Chat","model_source":"Custom","usage":{"input_tokens":0,"output_tokens":0},'
        + '"amount":{"basic_amount":"0.000000","pay_go_amount":"0.000000","total_amount":"0.000000","currency":"CNY"}}],"former_member":false}],'
        + '"not_found_user_ids":[],"not_found_emails":[]}');
      expect(reply.json.message).toBe("success");
      expect(reply.json.request_id).toMatch(/\S/);
    });
  });

  // ---------------------------------------------------------------------------------------------
  describe("access", () => {
    it("needs statistics:read for the query (30017 without it)", async () => {
      const others: Permission[] = ["usage:write", "departments:read", "environments:read", "environments:write"];
      const reply = await query(await svc.token(others), { ...EMPTY, user_ids: ["7001"] });
      await expectFailure(reply, 403, 30017, "permission denied: this operation needs statistics:read");
      const allowed = await query(await svc.token(["statistics:read"]), { ...EMPTY, user_ids: ["7001"] });
      expect(allowed.json).toStrictEqual(answer([item(LI_LEI)]));
    });

    it("answers 1002 to a query without a token or with a bad one", async () => {
      await expectFailure(await query(null, { ...EMPTY, user_ids: ["7001"] }), 401, 1002, "access token missing: send Authorization: Bearer <access_token>");
      await expectFailure(await query("not-a-token", { ...EMPTY, user_ids: ["7001"] }), 401, 1002, expect.any(String));
    });

    it("needs usage:write to record (30017 without it, 1002 without a token) and records nothing then", async () => {
      const t = await tenant();
      const m = t.members[0]!;
      const events = [ev(m.user_id, T0 + HOUR)];
      const readOnly = await svc.token(["statistics:read", "departments:read", "environments:read", "environments:write"], t.id);
      await expectFailure(await record(readOnly, events), 403, 30017, "permission denied: this operation needs usage:write");
      await expectFailure(await record(null, events), 401, 1002, "access token missing: send Authorization: Bearer <access_token>");
      expect(await modelUsageOf(t, m, T0, T0 + DAY)).toStrictEqual([]);
      expect(await mustRecord(await svc.token(["usage:write"], t.id), events)).toStrictEqual({ recorded: 1, duplicates: 0 });
    });
  });

  // ---------------------------------------------------------------------------------------------
  describe("ingestion", () => {
    it("records a batch; re-sending it changes no figure", async () => {
      const t = await tenant();
      const [m1, m2] = t.members as [Member, Member];
      const batch = [
        ev(m1.user_id, T0 + HOUR, { input_tokens: 10, output_tokens: 1, basic_amount: "0.1" }),
        ev(Number(m2.user_id), T0 + 2 * HOUR, { input_tokens: 20, output_tokens: 2, pay_go_amount: "0.2" }),
        ev(m1.user_id, T0 + DAY + HOUR, { input_tokens: 30, output_tokens: 3, basic_amount: "0.3" }),
        ev(m1.user_id, T0 + DAY + 2 * HOUR, { model_type: "CUE", input_tokens: 40, output_tokens: 4 }),
      ];
      const window = { start_time: T0, end_time: T0 + 2 * DAY, user_ids: [m1.user_id, m2.user_id] };
      const expected = answer([
        item(m1, [
          usage("model-a", "CUE", "Builtin", 40, 4, "0.000000", "0.000000", "0.000000"),
          usage("model-a", "Chat", "Builtin", 40, 4, "0.400000", "0.000000", "0.400000"),
        ]),
        item(m2, [usage("model-a", "Chat", "Builtin", 20, 2, "0.000000", "0.200000", "0.200000")]),
      ]);
      expect(await mustRecord(t.token, batch)).toStrictEqual({ recorded: 4, duplicates: 0 });
      expect((await query(t.token, window)).json).toStrictEqual(expected);
      expect(await mustRecord(t.token, batch)).toStrictEqual({ recorded: 0, duplicates: 4 });
      expect((await query(t.token, window)).json).toStrictEqual(expected);
      // A re-sent event_id with other figures changes nothing either; a new one in the same batch counts.
      const changed = { ...batch[0]!, input_tokens: 999, basic_amount: "9" };
      const fresh = ev(m2.user_id, T0 + 3 * HOUR, { input_tokens: 5, pay_go_amount: "0.05" });
      expect(await mustRecord(t.token, [changed, batch[1]!, fresh])).toStrictEqual({ recorded: 1, duplicates: 2 });
      expect((await query(t.token, window)).json).toStrictEqual(answer([
        item(m1, [
          usage("model-a", "CUE", "Builtin", 40, 4, "0.000000", "0.000000", "0.000000"),
          usage("model-a", "Chat", "Builtin", 40, 4, "0.400000", "0.000000", "0.400000"),
        ]),
        item(m2, [usage("model-a", "Chat", "Builtin", 25, 2, "0.000000", "0.250000", "0.250000")]),
      ]));
    });

    it("records an event_id repeated inside one batch once", async () => {
      const t = await tenant();
      const m = t.members[0]!;
      const e = ev(m.user_id, T0 + HOUR, { input_tokens: 3, basic_amount: "0.3" });
      expect(await mustRecord(t.token, [e, e, { ...e }])).toStrictEqual({ recorded: 1, duplicates: 2 });
      expect(await modelUsageOf(t, m, T0, T0 + DAY)).toStrictEqual([usage("model-a", "Chat", "Builtin", 3, 0, "0.300000", "0.000000", "0.300000")]);
    });

    it("records the same event_id in two enterprises independently", async () => {
      const a = await tenant();
      const b = await tenant();
      const e = { ...ev(a.members[0]!.user_id, T0 + HOUR, { input_tokens: 2 }), event_id: "shared-id" };
      expect(await mustRecord(a.token, [e])).toStrictEqual({ recorded: 1, duplicates: 0 });
      expect(await mustRecord(b.token, [{ ...e, user_id: b.members[0]!.user_id }])).toStrictEqual({ recorded: 1, duplicates: 0 });
      expect(await modelUsageOf(b, b.members[0]!, T0, T0 + DAY)).toStrictEqual([usage("model-a", "Chat", "Builtin", 2, 0, "0.000000", "0.000000", "0.000000")]);
    });

    // One bad event (at index 1, after a good one) rejects the whole batch.
    const badEvents: Array<[string, Record<string, unknown>, string]> = [
      ["an unknown member", { user_id: "999999" }, "user_id"],
      ["another enterprise's member", { user_id: "8001" }, "user_id"],
      ["a bad model_type", { model_type: "chat" }, "model_type"],
      ["a bad model_source", { model_source: "builtin" }, "model_source"],
      ["negative tokens", { input_tokens: -5 }, "input_tokens"],
      ["non-numeric tokens", { output_tokens: "many" }, "output_tokens"],
      ["fractional tokens", { input_tokens: 1.5 }, "input_tokens"],
      ["tokens over the per-event ceiling", { input_tokens: String(MAX_EVENT_TOKENS + 1n) }, "input_tokens"],
      ["an amount with 7 decimals", { basic_amount: "0.1234567" }, "basic_amount"],
      ["a negative amount", { pay_go_amount: "-0.5" }, "pay_go_amount"],
      ["an amount as a JSON number", { basic_amount: 0.5 }, "basic_amount"],
      ["an amount over the per-event ceiling", { pay_go_amount: sixDecimals(MAX_EVENT_MICROS + 1n) }, "pay_go_amount"],
      ["a non-zero amount on a Custom model", { model_source: "Custom", basic_amount: "0", pay_go_amount: "0.000001" }, "pay_go_amount"],
      ["an unknown field", { container_image: "x" }, "container_image"],
      ["no model_name", { model_name: undefined }, "model_name"],
      ["no timestamp", { timestamp: undefined }, "timestamp"],
      ["a NUL character in model_name", { model_name: "a\u0000b" }, "model_name"],
    ];

    it.each(badEvents)("rejects the whole batch for %s with 4001 naming events[1] and the field; records nothing", async (label, over, field) => {
      const t = await tenant();
      const m = t.members[0]!;
      const good = ev(m.user_id, T0 + HOUR, { model_name: "good", input_tokens: 7 });
      const bad = ev(m.user_id, T0 + 2 * HOUR, { ...over, event_id: `bad-${label}` });
      const reply = await record(t.token, [good, bad]);
      await expectFailure(reply, 400, 4001, naming("events[1]", field));
      expect(await modelUsageOf(t, m, 0, 180 * DAY)).toStrictEqual([]);
      expect(await modelUsageOf(t, m, T0, T0 + DAY)).toStrictEqual([]);
      // The good event's id was not used up: alone, it records.
      expect(await mustRecord(t.token, [good])).toStrictEqual({ recorded: 1, duplicates: 0 });
    });

    it("says a timestamp in milliseconds looks like one, with the seconds it likely meant, as the import does; past 9999 otherwise gets the range", async () => {
      const t = await tenant();
      const m = t.members[0]!;
      const milliseconds = (T0 + HOUR) * 1000;
      await expectFailure(await record(t.token, [ev(m.user_id, T0, { event_id: "fine" }), ev(m.user_id, milliseconds, { event_id: "ms" })]), 400, 4001,
        `events[1].timestamp: must be Unix seconds; ${milliseconds} looks like milliseconds (${T0 + HOUR} in seconds)`);
      await expectFailure(await record(t.token, [ev(m.user_id, 253402300800)]), 400, 4001,
        "events[0].timestamp: must be greater than 0 and less than or equal to 253402300799");
      expect(await modelUsageOf(t, m, 0, 180 * DAY)).toStrictEqual([]);
    });

    it("counts lengths in characters: a model_name and event_id of 128 emoji are recorded, 129 are 4001 naming the field", async () => {
      const t = await tenant();
      const m = t.members[0]!;
      const long = "😀".repeat(128); // 256 UTF-16 units
      expect(await mustRecord(t.token, [ev(m.user_id, T0 + HOUR, { event_id: long, model_name: long })])).toStrictEqual({ recorded: 1, duplicates: 0 });
      expect((await modelUsageOf(t, m, T0, T0 + DAY)).map((u: any) => u.model_name)).toStrictEqual([long]);
      for (const field of ["event_id", "model_name"]) {
        const reply = await record(t.token, [ev(m.user_id, T0 + HOUR, { event_id: "e-129", [field]: `${long}😀` })]);
        await expectFailure(reply, 400, 4001, naming("events[0]", field));
      }
    });

    it("names the bad event by its position events[1], whatever the rule it breaks", async () => {
      // One request per rule; the answer lists the rules whose message does not name the event. Rules
      // checked by the proto (types, enums, ceilings) name it by position; the others add its event_id.
      const t = await tenant();
      const m = t.members[0]!;
      const lacking: Array<{ rule: string; status: number; message: string }> = [];
      for (const [label, over] of badEvents) {
        const reply = await record(t.token, [ev(m.user_id, T0 + HOUR), ev(m.user_id, T0 + 2 * HOUR, { ...over, event_id: `bad-${label}` })]);
        if (reply.status !== 400 || !String(reply.json.message).startsWith("events[1]")) {
          lacking.push({ rule: label, status: reply.status, message: reply.json.message });
        }
      }
      expect(lacking).toStrictEqual([]);
    });

    it("accepts 1000 events and rejects 1001 with 4001 naming the limit, recording none of them", async () => {
      const t = await tenant();
      const m = t.members[0]!;
      const events = Array.from({ length: 1001 }, (_, i) => ev(m.user_id, T0 + (i % 48) * HOUR, { basic_amount: "0.000001" }));
      await expectFailure(await record(t.token, events), 400, 4001, "events: must contain no more than 1000 items");
      expect(await modelUsageOf(t, m, T0, T0 + 2 * DAY)).toStrictEqual([]);
      expect(await mustRecord(t.token, events.slice(0, 1000))).toStrictEqual({ recorded: 1000, duplicates: 0 });
      expect(await modelUsageOf(t, m, T0, T0 + 2 * DAY)).toStrictEqual([usage("model-a", "Chat", "Builtin", 1000, 0, "0.001000", "0.000000", "0.001000")]);
      expect(await mustRecord(t.token, events.slice(0, 1000))).toStrictEqual({ recorded: 0, duplicates: 1000 });
      expect(await modelUsageOf(t, m, T0, T0 + 2 * DAY)).toStrictEqual([usage("model-a", "Chat", "Builtin", 1000, 0, "0.001000", "0.000000", "0.001000")]);
    });

    it("records exactly the new events of a batch of 1000 that repeats 500 recorded ones, interleaved", async () => {
      const t = await tenant();
      const [m1, m2] = t.members as [Member, Member];
      // Two members over three days, so the batch's rows spread over several insert statements.
      const events = Array.from({ length: 1000 }, (_, i) => ev(i % 3 === 0 ? m2.user_id : m1.user_id, T0 + (i % 72) * HOUR, { input_tokens: i + 1 }));
      const known = events.filter((_, i) => i % 2 === 1);
      expect(await mustRecord(t.token, known)).toStrictEqual({ recorded: 500, duplicates: 0 });
      expect(await mustRecord(t.token, events)).toStrictEqual({ recorded: 500, duplicates: 500 });
      const tokens = (member: Member) => events.reduce((sum, e, i) => sum + ((i % 3 === 0) === (member === m2) ? i + 1 : 0), 0);
      for (const member of [m1, m2]) {
        expect(await modelUsageOf(t, member, T0, T0 + 3 * DAY)).toStrictEqual([usage("model-a", "Chat", "Builtin", tokens(member), 0, "0.000000", "0.000000", "0.000000")]);
      }
    });

    it("rejects an empty batch with 4001", async () => {
      const t = await tenant();
      await expectFailure(await record(t.token, []), 400, 4001, naming("events"));
    });

    // A member's running totals near their limit (the API's uint64, 2^64 - 1 = 18446744073709551615,
    // so that every window's sum fits the answer) take millions of events at the API's per-event
    // ceiling; they are seeded below the API (recordUsage, which keeps the store's own guard) and read
    // through REST.
    it("refuses an ingestion that would pass the uint64 limit for a member's running total with 4001, recording none of it", async () => {
      const t = await tenant();
      const m = t.members[0]!;
      const E18 = 10n ** 18n;
      expect(await seed(t.id, [
        ev(m.user_id, T0 + HOUR, { model_name: "huge", input_tokens: String(9n * E18) }),
        ev(m.user_id, T0 + 3 * HOUR, { model_name: "huge", input_tokens: String(9n * E18) }),
      ])).toStrictEqual({ recorded: 2, duplicates: 0 });
      const over = seed(t.id, [
        ev(m.user_id, T0 + 2 * DAY, { model_name: "huge", input_tokens: "5" }),
        ev(m.user_id, T0 + 2 * HOUR, { model_name: "huge", input_tokens: String(E18) }),
      ]);
      await expect(over).rejects.toMatchObject({ code: 4001, message: naming("uint64", "18446744073709551615") });
      const reply = await query(t.token, { start_time: T0, end_time: T0 + 3 * DAY, user_ids: [m.user_id] });
      expect(reply.json).toStrictEqual(answer([item(m, [usage("huge", "Chat", "Builtin", 18n * E18, 0, "0.000000", "0.000000", "0.000000")])]));
    });

    it("refuses an ingestion that would pass the uint64 limit for a member's running totals over all its models with 4001; reports still answer", async () => {
      const t = await tenant();
      const m = t.members[0]!;
      const E18 = 10n ** 18n;
      expect(await seed(t.id, [
        ev(m.user_id, T0 + HOUR, { model_name: "huge-a", input_tokens: String(9n * E18) }),
        ev(m.user_id, T0 + DAY + HOUR, { model_name: "huge-b", input_tokens: String(9n * E18) }),
      ])).toStrictEqual({ recorded: 2, duplicates: 0 });
      // Each model's running total stays below the limit, their sum would not: nor would a day's sum over both models.
      const over = seed(t.id, [ev(m.user_id, T0 + DAY + 2 * HOUR, { model_name: "huge-a", input_tokens: String(E18) })]);
      await expect(over).rejects.toMatchObject({ code: 4001, message: naming("uint64", "18446744073709551615") });
      const reply = await post("/openapi/v1/statistics/usage-report", { start_time: T0, end_time: T0 + 2 * DAY, bucket: "none", time_zone: "UTC" }, t.token);
      expect(reply.json.data.buckets[0].groups[0]).toMatchObject({ events: 2, input_tokens: 18n * E18 });
    });

    it("reads a window whose sum passes 2^63 exactly, from running totals and from raw events", async () => {
      const t = await tenant();
      const m = t.members[0]!;
      const E18 = 10n ** 18n;
      expect(await seed(t.id, [
        ev(m.user_id, T0 + HOUR, { model_name: "huge", input_tokens: String(5n * E18) }),
        ev(m.user_id, T0 + 120 * DAY + HOUR, { model_name: "huge", input_tokens: String(5n * E18) }),
      ])).toStrictEqual({ recorded: 2, duplicates: 0 });
      // Whole days (running totals), and a window cutting through both days (running totals and raw events).
      for (const [start, end] of [[T0, T0 + 121 * DAY], [T0 + 1, T0 + 121 * DAY - 1]] as const) {
        const reply = await query(t.token, { start_time: start, end_time: end, user_ids: [m.user_id] });
        expect(reply.json, `window [${start}, ${end})`).toStrictEqual(answer([item(m, [usage("huge", "Chat", "Builtin", 10n * E18, 0, "0.000000", "0.000000", "0.000000")])]));
      }
    });
  });

  // ---------------------------------------------------------------------------------------------
  describe.each([["JSON", false], ["binary", true]] as const)("over the Connect protocol (%s)", (_format, useBinaryFormat) => {
    const client = () => createClient(UsageService, createConnectTransport({ baseUrl: svc.baseUrl, httpVersion: "1.1", useBinaryFormat }));
    const auth = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
    const plain = (m: MemberUsage) => ({
      user_id: m.userId, email: m.email, account_type: m.accountType, former_member: m.formerMember,
      model_usage: m.modelUsage.map((u) => ({
        model_name: u.modelName, model_type: u.modelType, model_source: u.modelSource,
        usage: { input_tokens: u.usage?.inputTokens, output_tokens: u.usage?.outputTokens },
        amount: { basic_amount: u.amount?.basicAmount, pay_go_amount: u.amount?.payGoAmount, total_amount: u.amount?.totalAmount, currency: u.amount?.currency },
      })),
    });
    const rpcEvent = (e: Record<string, unknown>) => ({
      eventId: e.event_id as string, userId: String(e.user_id), modelName: e.model_name as string, modelType: e.model_type as string,
      modelSource: e.model_source as string, timestamp: BigInt(e.timestamp as number), inputTokens: BigInt(e.input_tokens as number),
      outputTokens: BigInt(e.output_tokens as number), basicAmount: e.basic_amount as string, payGoAmount: e.pay_go_amount as string,
    });
    const failed = (promise: Promise<unknown>) => promise.then(() => undefined, (e: unknown) => ConnectError.from(e));
    const details = (error: ConnectError | undefined) => error?.findDetails(ErrorDetailSchema).map((d) => ({ code: d.code, message: d.message }));

    it("records, re-sends (duplicates) and queries with exact 64-bit sums, order of first mention and not-found lists", async () => {
      const t = await tenant();
      const [m1, m2] = t.members as [Member, Member];
      // 2^53 - 1 tokens seeded below the API (its per-event ceiling is far lower), then events through
      // Connect on top: the sum, 2^53 + 2 x ceiling - 1, must come back exact as a 64-bit integer.
      expect(await seed(t.id, [ev(m2.user_id, T0 + 2 * DAY, { model_name: "big", input_tokens: "9007199254740991" })])).toStrictEqual({ recorded: 1, duplicates: 0 });
      const events = [
        ...Array.from({ length: 9 }, (_, i) => ev(m2.user_id, T0 + i * 9 * HOUR, { model_name: "big", input_tokens: i === 0 ? TOKEN_CAP : 0, basic_amount: "0.1" })),
        ev(m2.user_id, T0 + 90 * HOUR, { model_name: "big", input_tokens: TOKEN_CAP, basic_amount: "0.2", pay_go_amount: "0.000001" }),
        ev(m2.user_id, T0 + HOUR, { model_name: "Zeta", model_source: "Custom", output_tokens: 5 }),
      ];
      const sent = await client().recordUsageEvents({ events: events.map(rpcEvent) }, auth(t.token));
      expect({ recorded: sent.recorded, duplicates: sent.duplicates }).toStrictEqual({ recorded: 11, duplicates: 0 });
      const again = await client().recordUsageEvents({ events: events.map(rpcEvent) }, auth(t.token));
      expect({ recorded: again.recorded, duplicates: again.duplicates }).toStrictEqual({ recorded: 0, duplicates: 11 });

      const res = await client().queryUserModelUsage({
        startTime: BigInt(T0 - HOUR), endTime: BigInt(T0 + 4 * DAY + 1),
        userIds: [m2.user_id, "nobody", m2.user_id], emails: [m1.email.toUpperCase(), m2.email, "Nobody@X.example", "nobody@x.EXAMPLE"],
      }, auth(t.token));
      expect(res.items.map(plain)).toStrictEqual([
        item(m2, [
          usage("Zeta", "Chat", "Custom", 1n, 5n, "0.000000", "0.000000", "0.000000"),
          usage("big", "Chat", "Builtin", 9_007_199_254_740_991n + 2n * MAX_EVENT_TOKENS, 0n, "1.100000", "0.000001", "1.100001"),
        ]),
        item(m1, []),
      ]);
      expect(res.notFoundUserIds).toStrictEqual(["nobody"]);
      expect(res.notFoundEmails).toStrictEqual(["Nobody@X.example"]);
    });

    it("rejects a NUL character in the second event's model_name with invalid_argument carrying 4001 and its path", async () => {
      const t = await tenant();
      const m = t.members[0]!;
      const events = [ev(m.user_id, T0 + HOUR), ev(m.user_id, T0 + 2 * HOUR, { model_name: "a\u0000b" })].map(rpcEvent);
      const error = await failed(client().recordUsageEvents({ events }, auth(t.token)));
      expect(error?.code).toBe(Code.InvalidArgument);
      // One check for every transport and format (the validation step), naming fields as the proto does.
      expect(details(error)).toStrictEqual([{ code: 4001, message: "events[1].model_name: must not contain the NUL character (U+0000)" }]);
    });

    it("rejects 101 entries with invalid_argument carrying 4001 and 101 > 100", async () => {
      const error = await failed(client().queryUserModelUsage({
        startTime: BigInt(EMPTY.start_time), endTime: BigInt(EMPTY.end_time),
        userIds: Array.from({ length: 51 }, (_, i) => `u-${i}`), emails: Array.from({ length: 50 }, (_, i) => `n${i}@x.example`),
      }, auth(acmeToken)));
      expect(error?.code).toBe(Code.InvalidArgument);
      expect(details(error)).toStrictEqual([{ code: 4001, message: "user_ids plus emails after de-duplication: 101 > 100" }]);
    });

    it("accepts 100 entries after de-duplication", async () => {
      const res = await client().queryUserModelUsage({
        startTime: BigInt(EMPTY.start_time), endTime: BigInt(EMPTY.end_time),
        // 1 + 98 unique ids (7002 twice) + 1 e-mail naming 7002 again = 100.
        userIds: ["7002", ...Array.from({ length: 98 }, (_, i) => `u-${i}`), "7002"], emails: ["han.meimei@ACME.example"],
      }, auth(acmeToken));
      expect(res.items.map(plain)).toStrictEqual([item(HAN)]);
      expect(res.notFoundUserIds).toHaveLength(98);
      expect(res.notFoundEmails).toStrictEqual([]);
    });

    it.each([
      ["a span of 180 days + 1 s", BigInt(T0), BigInt(T0 + 180 * DAY + 1), ["7001"], "end_time - start_time: 15552001 seconds > 15552000 (180 days)"],
      ["end_time equal to start_time", BigInt(T0), BigInt(T0), ["7001"], `end_time must be after start_time (start_time ${T0}, end_time ${T0})`],
      ["neither user_ids nor emails", BigInt(T0), BigInt(T0 + 1), [], "user_ids, emails: at least one of them must name a member"],
    ])("rejects %s with 4001", async (_label, startTime, endTime, userIds, message) => {
      const error = await failed(client().queryUserModelUsage({ startTime, endTime, userIds }, auth(acmeToken)));
      expect(error?.code).toBe(Code.InvalidArgument);
      expect(details(error)).toStrictEqual([{ code: 4001, message }]);
    });

    it("accepts a span of exactly 180 days", async () => {
      const res = await client().queryUserModelUsage({ startTime: BigInt(T0 - 300 * DAY), endTime: BigInt(T0 - 120 * DAY), userIds: ["7001"] }, auth(acmeToken));
      expect(res.items.map(plain)).toStrictEqual([item(LI_LEI)]);
    });

    it("needs statistics:read (30017) and usage:write (30017), and a token (1002)", async () => {
      const request = { startTime: BigInt(EMPTY.start_time), endTime: BigInt(EMPTY.end_time), userIds: ["7001"] };
      const denied = await failed(client().queryUserModelUsage(request, auth(await svc.token(["usage:write"]))));
      expect(denied?.code).toBe(Code.PermissionDenied);
      expect(details(denied)).toStrictEqual([{ code: 30017, message: "permission denied: this operation needs statistics:read" }]);
      const deniedWrite = await failed(client().recordUsageEvents({ events: [rpcEvent(ev("7001", EMPTY.start_time))] }, auth(await svc.token(["statistics:read"]))));
      expect(deniedWrite?.code).toBe(Code.PermissionDenied);
      expect(details(deniedWrite)).toStrictEqual([{ code: 30017, message: "permission denied: this operation needs usage:write" }]);
      const anonymous = await failed(client().queryUserModelUsage(request));
      expect(anonymous?.code).toBe(Code.Unauthenticated);
      expect(details(anonymous)?.map((d) => d.code)).toStrictEqual([1002]);
    });

    it.each([
      ["an unknown member", { user_id: "999999" }, "user_id"],
      ["a non-zero amount on a Custom model", { model_source: "Custom", basic_amount: "0.5" }, "basic_amount"],
      ["an amount with 7 decimals", { pay_go_amount: "0.0000001" }, "pay_go_amount"],
      ["a bad model_type", { model_type: "CHAT" }, "model_type"],
    ])("rejects the whole batch for %s with 4001 naming events[1] and the field; records nothing", async (label, over, field) => {
      const t = await tenant();
      const m = t.members[0]!;
      const events = [ev(m.user_id, T0 + HOUR), ev(m.user_id, T0 + 2 * HOUR, { ...over, event_id: `bad-${label}` })];
      const error = await failed(client().recordUsageEvents({ events: events.map(rpcEvent) }, auth(t.token)));
      expect(error?.code).toBe(Code.InvalidArgument);
      expect(details(error)).toStrictEqual([{ code: 4001, message: naming("events[1]", field) }]);
      expect(await modelUsageOf(t, m, T0, T0 + DAY)).toStrictEqual([]);
    });

    it("rejects 1001 events with 4001", async () => {
      const t = await tenant();
      const m = t.members[0]!;
      const events = Array.from({ length: 1001 }, (_, i) => rpcEvent(ev(m.user_id, T0 + i)));
      const error = await failed(client().recordUsageEvents({ events }, auth(t.token)));
      expect(error?.code).toBe(Code.InvalidArgument);
      expect(details(error)).toStrictEqual([{ code: 4001, message: "events: must contain no more than 1000 items" }]);
      expect(await modelUsageOf(t, m, T0, T0 + DAY)).toStrictEqual([]);
    });
  });
});
