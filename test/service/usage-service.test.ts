// UsageService in memory (router transport, real chain and database): recording events, the usage
// query's rules and the export stream.
import { Code, type Client } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UsageService } from "../../gen/enterprise_admin/v1/usage_pb.js";
import { ErrorCode } from "../../src/domain/errors.js";
import { dialects } from "../helpers/databases.js";
import { failureOf, startInMemoryService, type InMemoryService } from "../helpers/in-memory-service.js";
import { UsageRepository } from "../../src/storage/usage-repository.js";

const DAY = 86_400n;
const START = 1_794_787_200n; // 2026-11-16T00:00:00Z

const event = (eventId: string, userId: string, at: bigint, model = "atlas-4", basicAmount = "0.100000") => ({
  eventId, userId, modelName: model, modelType: "Chat", modelSource: "Builtin", timestamp: at, inputTokens: 100n, outputTokens: 10n, basicAmount, payGoAmount: "0.020000",
});

describe.each(dialects)("UsageService in memory (%s)", (dialect) => {
  let service: InMemoryService;
  let usage: Client<typeof UsageService>;

  beforeAll(async () => {
    service = await startInMemoryService(dialect);
    usage = service.client(UsageService, await service.token(["statistics:read", "usage:write"]));
    const recorded = await usage.recordUsageEvents({
      events: [event("e1", "7001", START + 60n), event("e2", "7001", START + 120n), event("e3", "7001", START + 180n, "Zeta"), event("e4", "7002", START + DAY + 5n)],
    });
    expect(recorded).toMatchObject({ recorded: 4, duplicates: 0 });
  });
  afterAll(() => service.close());

  it("re-recording an event_id changes nothing", async () => {
    expect(await usage.recordUsageEvents({ events: [event("e1", "7001", START + 60n)] })).toMatchObject({ recorded: 0, duplicates: 1 });
  });

  it("the query sums each member's models exactly, in code point order, and lists unknown ids and e-mails as sent", async () => {
    const answer = await usage.queryUserModelUsage({ startTime: START, endTime: START + DAY, userIds: ["7001", "9999", "7001"], emails: ["LI.LEI@acme.example", "Nobody@acme.example"] });
    expect(answer.items.map((m) => m.userId)).toEqual(["7001"]);
    expect(answer.items[0]!.modelUsage.map((m) => [m.modelName, m.usage?.inputTokens, m.amount?.basicAmount, m.amount?.totalAmount, m.amount?.currency])).toEqual([
      ["Zeta", 100n, "0.100000", "0.120000", "CNY"],
      ["atlas-4", 200n, "0.200000", "0.240000", "CNY"],
    ]);
    expect(answer.notFoundUserIds).toEqual(["9999"]);
    expect(answer.notFoundEmails).toEqual(["Nobody@acme.example"]);
  });

  it("a window over 180 days is 4001 naming the limit", async () => {
    expect(await failureOf(usage.queryUserModelUsage({ startTime: START, endTime: START + 181n * DAY, userIds: ["7001"] }))).toEqual({
      code: Code.InvalidArgument, errorCode: ErrorCode.INVALID_PARAMETER, message: "end_time - start_time: 15638400 seconds > 15552000 (180 days)",
    });
  });

  it("an event of an unknown member is refused and nothing of its batch is recorded", async () => {
    const failure = await failureOf(usage.recordUsageEvents({ events: [event("new-1", "7001", START + 300n), event("new-2", "4242", START + 300n)] }));
    expect(failure).toMatchObject({ code: Code.InvalidArgument, errorCode: ErrorCode.INVALID_PARAMETER });
    expect(failure.message).toContain("4242");
    const answer = await usage.queryUserModelUsage({ startTime: START, endTime: START + DAY, userIds: ["7001"] });
    expect(answer.items[0]!.modelUsage.find((m) => m.modelName === "atlas-4")?.usage?.inputTokens).toBe(200n);
  });

  it("the export streams one row per (local date, member, model) and names its file in a header", async () => {
    let disposition: string | null = null;
    const rows = [];
    for await (const message of usage.exportUsage({ startTime: START, endTime: START + 2n * DAY, timeZone: "UTC" }, { onHeader: (h) => (disposition = h.get("content-disposition")) })) {
      rows.push(...message.rows);
    }
    expect(rows.map((r) => [r.date, r.userId, r.modelName, r.events])).toEqual([
      ["2026-11-16", "7001", "Zeta", 1n],
      ["2026-11-16", "7001", "atlas-4", 2n],
      ["2026-11-17", "7002", "atlas-4", 1n],
    ]);
    expect(disposition).toMatch(/^attachment; filename="/);
  });

  it("the export's permission is checked before its first message: 30017 without statistics:read", async () => {
    const writer = service.client(UsageService, await service.token(["usage:write"]));
    const messages = writer.exportUsage({ startTime: START, endTime: START + DAY });
    expect(await failureOf((async () => { for await (const _ of messages) void _; })())).toMatchObject({
      code: Code.PermissionDenied, errorCode: ErrorCode.PERMISSION_DENIED,
    });
  });

  it("an enterprise whose usage layout is not the code's is answered from its raw events, exactly, and gets no running totals until a rebuild", async () => {
    const { db } = service.database;
    const runningTotalRows = async () => (await db.selectFrom("usage_running_total").select(["member_key", "day", "totals"]).orderBy("member_key").orderBy("day").execute())
      .map((r) => `${r.member_key} ${r.day} ${Buffer.from(r.totals).toString("hex")}`);
    const atlas = async () => (await usage.queryUserModelUsage({ startTime: START, endTime: START + 3n * DAY, userIds: ["7001"] }))
      .items[0]!.modelUsage.filter((m) => m.modelName === "atlas-4").map((m) => [m.usage?.inputTokens, m.amount?.basicAmount, m.amount?.totalAmount]);
    expect(await atlas()).toEqual([[200n, "0.200000", "0.240000"]]);
    await db.updateTable("usage_layout").set({ version: 3 }).where("enterprise_id", "=", "acme").execute(); // a layout of another version
    const stored = await runningTotalRows();
    expect(await usage.recordUsageEvents({ events: [event("e5", "7001", START + DAY + 60n, "atlas-4", "0.300000")] })).toMatchObject({ recorded: 1 });
    expect(await runningTotalRows()).toEqual(stored); // no pre-aggregate is added to a layout of another version
    expect(await atlas()).toEqual([[300n, "0.500000", "0.560000"]]); // from the raw events
    await new UsageRepository(service.database).rebuild("acme");
    expect(await runningTotalRows()).not.toEqual(stored);
    expect(await atlas()).toEqual([[300n, "0.500000", "0.560000"]]); // from the running totals again
  });
});
