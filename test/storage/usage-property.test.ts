// Property-based: random usage events (few members, few models including Custom ones, timestamps over
// ~10 days with exact day and hour boundaries), recorded in several batches with some event_ids
// re-sent, then summed over random windows (cutting through days and hours, or starting and ending
// exactly on day boundaries and on event timestamps). Every figure must equal a plain bigint sum of
// the events in [start, end), each event_id counted once (the first one sent). Re-sending a batch
// and re-importing the directory change no figure.
//
// Two levels, each run on a fresh enterprise so runs are independent:
//  - storage: the real ingestion path (checkUsageEvent + recordUsage) and UsageRepository.sumUsage
//    over planWindow's plan, against the reference, the last batches imported as one NDJSON file
//    (importUsage) instead of sent; then every event again as an import, which must find them all
//    recorded already;
//  - REST: the running service (batch-record, user-model-usage), fewer runs, exact JSON.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkUsageEvent, MAX_EVENT_MICROS, MAX_EVENT_TOKENS, type RawUsageEvent } from "../../src/domain/usage-event.js";
import { checkWindow, planWindow } from "../../src/domain/usage-window.js";
import type { DirectoryFile } from "../../src/domain/directory-file.js";
import { importDirectory } from "../../src/operations/import-directory.js";
import { importUsage } from "../../src/operations/import-usage.js";
import type { UsageFileTuning } from "../../src/operations/usage-file-worker.js";
import { recordUsage } from "../../src/operations/record-usage.js";
import { migrateToLatest, openDatabase, type Database } from "../../src/storage/database.js";
import { UsageRepository } from "../../src/storage/usage-repository.js";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/databases.js";
import { sumRows } from "../helpers/window-sums.js";
import { startTestService, type TestService } from "../helpers/service.js";
import {
  byCodePoint, expectedModelUsage, firstOfEachId, parseJsonBig, referenceSums, type ReferenceEvent, type ReferenceSum,
} from "../helpers/usage-reference.js";

const DAY = 86_400;
const HOUR = 3_600;
/** 2024-10-28T00:00:00Z: a UTC day boundary. */
const T0 = 1_730_073_600;

// Raise USAGE_PROPERTY_RUNS (and USAGE_PROPERTY_REST_RUNS) for a deeper search. A storage scenario
// imports two files (each import bundles its worker threads with esbuild and starts three of them):
// about half a second each; a REST one takes a tenth of that.
const STORAGE_RUNS = Number(process.env.USAGE_PROPERTY_RUNS ?? 10);
const REST_RUNS = Number(process.env.USAGE_PROPERTY_REST_RUNS ?? 12);

const MODELS = [
  { name: "m-a", type: "Chat", source: "Builtin" },
  { name: "m-a", type: "CUE", source: "Builtin" },
  { name: "m-a", type: "Chat", source: "Custom" },
  { name: "Zeta", type: "CUE", source: "Custom" },
  { name: "zeta", type: "Chat", source: "Builtin" },
  { name: "\u{1F600}-model", type: "CUE", source: "Builtin" },
] as const;
const MEMBER_COUNT = 3;

// ---------- generators ----------

/** Seconds after T0: anywhere in 10 days, on a day or hour boundary, or one second beside an hour boundary. */
const offsetArb = fc.oneof(
  fc.integer({ min: 0, max: 10 * DAY }),
  fc.integer({ min: 0, max: 10 }).map((d) => d * DAY),
  fc.integer({ min: 0, max: 240 }).map((h) => h * HOUR),
  fc.tuple(fc.integer({ min: 1, max: 240 }), fc.constantFrom(-1, 1)).map(([h, s]) => h * HOUR + s),
);

/** Token counts up to the API's per-event ceiling, the ceiling itself included. */
const tokensArb = fc.oneof(
  { arbitrary: fc.bigInt(0n, 1000n), weight: 4 },
  { arbitrary: fc.constant(0n), weight: 1 },
  { arbitrary: fc.bigInt(0n, MAX_EVENT_TOKENS), weight: 2 },
  { arbitrary: fc.constant(MAX_EVENT_TOKENS), weight: 1 },
);

/** Amounts in micro-units up to the per-event ceiling. */
const microsArb = fc.oneof(
  { arbitrary: fc.constant(0n), weight: 2 },
  { arbitrary: fc.bigInt(0n, 1_000_000n), weight: 3 },
  { arbitrary: fc.bigInt(0n, MAX_EVENT_MICROS), weight: 1 },
  { arbitrary: fc.constant(MAX_EVENT_MICROS), weight: 1 },
);

interface GenEvent {
  member: number;
  model: number;
  offset: number;
  input: bigint;
  output: bigint;
  basic: bigint;
  payGo: bigint;
  /** How the amounts are written: 0 full six decimals, 1 trailing zeros trimmed, 2 zero omitted, 3 zero as "". */
  basicStyle: number;
  payGoStyle: number;
  tokensAsText: boolean;
}

const eventArb: fc.Arbitrary<GenEvent> = fc.record({
  member: fc.nat(MEMBER_COUNT - 1),
  model: fc.nat(MODELS.length - 1),
  offset: offsetArb,
  input: tokensArb,
  output: tokensArb,
  basic: microsArb,
  payGo: microsArb,
  basicStyle: fc.nat(3),
  payGoStyle: fc.nat(3),
  tokensAsText: fc.boolean(),
});

/** A window end: a second, a day or hour boundary, or an event's timestamp (+-1), resolved against the events. */
type Point =
  | { at: "second"; offset: number }
  | { at: "day"; day: number }
  | { at: "hour"; hour: number }
  | { at: "event"; pick: number; delta: number };

const pointArb: fc.Arbitrary<Point> = fc.oneof(
  fc.record({ at: fc.constant("second" as const), offset: fc.integer({ min: -DAY, max: 11 * DAY }) }),
  fc.record({ at: fc.constant("day" as const), day: fc.integer({ min: -1, max: 11 }) }),
  fc.record({ at: fc.constant("hour" as const), hour: fc.integer({ min: -24, max: 264 }) }),
  fc.record({ at: fc.constant("event" as const), pick: fc.nat(), delta: fc.constantFrom(-1, 0, 0, 1) }),
);

interface Resend {
  pick: number;
  batch: number;
  /** Re-sent in a later batch with other figures: must change nothing. */
  mutate: boolean;
}

interface Scenario {
  events: GenEvent[];
  batches: number;
  batchOf: number[];
  resends: Resend[];
  windows: Array<[Point, Point]>;
  /** Which whole batch is sent once more at the end. */
  resendBatch: number;
  /** Storage: the batches from this one on are not sent but imported, as one NDJSON file. */
  importFrom: number;
  /** Storage: that import's batch and chunk sizes (small: many batches and many chunks). */
  tuning: UsageFileTuning;
  /**
   * Events in time order, each batch later than the one before, and the file too (the usual export):
   * the import's running totals then go on top of stored rows before, on or after a member's first
   * day in the file, with repeats in it (re-sends) in their time's place.
   */
  timeOrdered: boolean;
  currency: "CNY" | "USD";
  /** REST: members named by id (in this order) and by e-mail (in this order, maybe upper-cased). */
  byId: number[];
  byEmail: number[];
  upperEmails: boolean;
}

const scenarioArb = (maxEvents: number): fc.Arbitrary<Scenario> =>
  fc.record({
    events: fc.array(eventArb, { maxLength: maxEvents, size: "max" }), batches: fc.integer({ min: 1, max: 4 }), timeOrdered: fc.boolean(), dayCuts: fc.boolean(),
  }).chain(({ events, batches, timeOrdered, dayCuts }) => fc.record({
      events: fc.constant(timeOrdered ? [...events].sort((a, b) => a.offset - b.offset) : events),
      batches: fc.constant(batches),
      // In time order: batches of equal counts (cut inside a day), or of whole days.
      batchOf: !timeOrdered
        ? fc.array(fc.nat(batches - 1), { minLength: events.length, maxLength: events.length })
        : fc.constant(dayCuts
          ? [...events].sort((a, b) => a.offset - b.offset).map((e) => Math.floor((Math.floor(e.offset / DAY) * batches) / 11))
          : events.map((_, i) => Math.floor((i * batches) / events.length))),
      timeOrdered: fc.constant(timeOrdered),
      resends: fc.array(fc.record({ pick: fc.nat(), batch: fc.nat(batches - 1), mutate: fc.boolean() }), { maxLength: 200 - maxEvents, size: "medium" }),
      windows: fc.array(fc.tuple(pointArb, pointArb), { minLength: 1, maxLength: 6 }),
      resendBatch: fc.nat(batches - 1),
      importFrom: fc.nat(batches),
      tuning: fc.record({ batchEvents: fc.integer({ min: 1, max: 40 }), chunkEvents: fc.integer({ min: 1, max: 120 }) }),
      currency: fc.constantFrom("CNY" as const, "USD" as const),
      byId: fc.shuffledSubarray([0, 1, 2]),
      byEmail: fc.shuffledSubarray([0, 1, 2]),
      upperEmails: fc.boolean(),
    }));

// ---------- building a run ----------

const members = (n: number) => Array.from({ length: MEMBER_COUNT }, (_, i) => ({
  user_id: `u${i + 1}`, email: `User${i + 1}@Prop${n}.Example`, account_type: (i % 2 + 1) as 1 | 2,
}));

function directory(enterpriseId: string, n: number, currency: "CNY" | "USD"): DirectoryFile {
  return {
    enterprise: { enterprise_id: enterpriseId, name: `Property run ${n}`, currency },
    departments: [],
    members: members(n).map((m) => ({ ...m, department_ids: [] })),
  };
}

function amountText(micros: bigint, style: number): string | undefined {
  if (micros === 0n && style === 2) return undefined;
  if (micros === 0n && style === 3) return "";
  const whole = micros / 1_000_000n;
  const fraction = (micros % 1_000_000n).toString().padStart(6, "0");
  if (style === 0) return `${whole}.${fraction}`;
  const trimmed = fraction.replace(/0+$/, "");
  return trimmed === "" ? `${whole}` : `${whole}.${trimmed}`;
}

interface Sent {
  /** The event as the wire carries it (JSON for REST, the raw shape for checkUsageEvent). */
  wire: Record<string, unknown>;
  reference: ReferenceEvent;
}

function toSent(g: GenEvent, eventId: string): Sent {
  const model = MODELS[g.model]!;
  const custom = model.source === "Custom";
  const basic = custom ? 0n : g.basic;
  const payGo = custom ? 0n : g.payGo;
  const timestamp = T0 + g.offset;
  const userId = `u${g.member + 1}`;
  const wire: Record<string, unknown> = {
    event_id: eventId, user_id: userId, model_name: model.name, model_type: model.type, model_source: model.source, timestamp,
    input_tokens: g.tokensAsText ? g.input.toString() : Number(g.input),
    output_tokens: g.tokensAsText ? g.output.toString() : Number(g.output),
  };
  const basicText = amountText(basic, g.basicStyle);
  const payGoText = amountText(payGo, g.payGoStyle);
  if (basicText !== undefined) wire.basic_amount = basicText;
  if (payGoText !== undefined) wire.pay_go_amount = payGoText;
  return {
    wire,
    reference: {
      event_id: eventId, user_id: userId, model_name: model.name, model_type: model.type, model_source: model.source, timestamp,
      input_tokens: g.input, output_tokens: g.output, basic_micros: basic, pay_go_micros: payGo,
    },
  };
}

/** The batches to send, in order: each event in its batch, re-sends appended (mutated ones only to a later batch). */
function buildBatches(s: Scenario): Sent[][] {
  const sent = s.events.map((g, i) => toSent(g, `e${i}`));
  const batches: Sent[][] = Array.from({ length: s.batches }, () => []);
  sent.forEach((e, i) => batches[s.batchOf[i]!]!.push(e));
  const resent: Sent[][] = Array.from({ length: s.batches }, () => []);
  if (sent.length > 0) {
    for (const r of s.resends) {
      const i = r.pick % sent.length;
      const batch = Math.max(r.batch, s.batchOf[i]!);
      if (r.mutate && batch > s.batchOf[i]!) {
        const g = s.events[i]!;
        const other = toSent({ ...g, offset: (g.offset + 7 * HOUR) % (10 * DAY), input: g.input === MAX_EVENT_TOKENS ? 0n : g.input + 1n }, `e${i}`);
        resent[batch]!.push(other);
      } else {
        resent[batch]!.push(sent[i]!);
      }
    }
  }
  return batches.map((b, i) => [...b, ...resent[i]!]);
}

/** { recorded, duplicates } that a batch must report, given the event_ids recorded before it. */
function expectedCounts(batch: readonly Sent[], seen: Set<string>): { recorded: number; duplicates: number } {
  let recorded = 0;
  for (const e of batch) {
    if (!seen.has(e.reference.event_id)) {
      seen.add(e.reference.event_id);
      recorded++;
    }
  }
  return { recorded, duplicates: batch.length - recorded };
}

function resolvePoint(p: Point, events: readonly ReferenceEvent[]): number {
  switch (p.at) {
    case "second": return T0 + p.offset;
    case "day": return T0 + p.day * DAY;
    case "hour": return T0 + p.hour * HOUR;
    case "event": return events.length === 0 ? T0 + p.delta : events[p.pick % events.length]!.timestamp + p.delta;
  }
}

function resolveWindow([a, b]: [Point, Point], events: readonly ReferenceEvent[]): [number, number] {
  const x = resolvePoint(a, events);
  const y = resolvePoint(b, events);
  const start = Math.max(0, Math.min(x, y));
  const end = Math.max(x, y);
  return [start, end > start ? end : start + 1];
}

// ---------- the properties ----------

describe.each(dialects)("usage sums, property-based (%s)", (dialect) => {
  describe("storage: checkUsageEvent + recordUsage, then sumUsage over planWindow", () => {
    let testDb: TestDatabase;
    let database: Database;
    let repository: UsageRepository;
    let runs = 0;
    let scratch: string;

    beforeAll(async () => {
      scratch = mkdtempSync(join(tmpdir(), "usage-property-"));
      testDb = await createTestDatabase(dialect);
      database = openDatabase(testDb.url);
      await migrateToLatest(database);
      repository = new UsageRepository(database);
    });

    afterAll(async () => {
      await database?.close();
      await testDb?.drop();
      if (scratch) rmSync(scratch, { recursive: true, force: true });
    });

    async function sums(enterpriseId: string, start: number, end: number): Promise<ReferenceSum[]> {
      const rows = await repository.membersByUserIds(enterpriseId, members(0).map((m) => m.user_id));
      expect(rows).toHaveLength(MEMBER_COUNT);
      const userOf = new Map(rows.map((r) => [Number(r.member_key), r.user_id]));
      const window = checkWindow(BigInt(start), BigInt(end));
      const plan = planWindow(window.start, window.end);
      const keys = [...userOf.keys()];
      const found = sumRows(await repository.sumUsage(keys, plan), keys);
      const out: ReferenceSum[] = [];
      const models = await repository.modelsById(found.map((row) => row.model_id));
      for (const row of found) {
        const model = models.get(row.model_id)!;
        out.push({
          user_id: userOf.get(row.member_key)!, model_name: model.model_name, model_type: model.model_type, model_source: model.model_source,
          input_tokens: BigInt(row.input_tokens), output_tokens: BigInt(row.output_tokens), basic_micros: BigInt(row.basic_micros), pay_go_micros: BigInt(row.pay_go_micros),
        });
      }
      return out.sort((a, b) => byCodePoint(a.user_id, b.user_id) || byCodePoint(a.model_name, b.model_name)
        || byCodePoint(a.model_type, b.model_type) || byCodePoint(a.model_source, b.model_source));
    }

    async function send(enterpriseId: string, batch: readonly Sent[]) {
      const labelled = batch.map((e, i) => ({ event: checkUsageEvent(e.wire as RawUsageEvent, `events[${i}]`), where: `events[${i}]` }));
      return recordUsage(repository, enterpriseId, labelled);
    }

    it("every window's sums equal the bigint reference; re-sending and re-importing change nothing", async () => {
      await fc.assert(fc.asyncProperty(scenarioArb(150), async (s) => {
        const n = ++runs;
        const enterpriseId = `prop-${dialect}-${n}`;
        await importDirectory(database, directory(enterpriseId, n, s.currency));
        const batches = buildBatches(s);
        const seen = new Set<string>();
        for (const batch of batches.slice(0, s.importFrom)) {
          if (batch.length === 0) continue;
          expect(await send(enterpriseId, batch)).toStrictEqual(expectedCounts(batch, seen));
        }
        // The later batches as one file: the import sums only the events it adds, not their repeats.
        const imported = batches.slice(s.importFrom).flat();
        if (s.timeOrdered) imported.sort((a, b) => a.reference.timestamp - b.reference.timestamp);
        if (imported.length > 0) {
          const file = join(scratch, `${enterpriseId}-first.ndjson`);
          writeFileSync(file, imported.map((e) => JSON.stringify(e.wire)).join("\n") + "\n");
          expect(await importUsage(repository, enterpriseId, file, undefined, s.tuning))
            .toStrictEqual({ enterprise_id: enterpriseId, lines: imported.length, ...expectedCounts(imported, seen) });
        }
        const counted = firstOfEachId([...batches.slice(0, s.importFrom).flat(), ...imported].map((e) => e.reference));
        const windows = s.windows.map((w) => resolveWindow(w, counted));
        const before: ReferenceSum[][] = [];
        for (const [start, end] of windows) {
          const actual = await sums(enterpriseId, start, end);
          expect(actual, `window [${start}, ${end})`).toStrictEqual(referenceSums(counted, start, end));
          before.push(actual);
        }

        const again = batches[s.resendBatch]!;
        if (again.length > 0) expect(await send(enterpriseId, again)).toStrictEqual({ recorded: 0, duplicates: again.length });
        await importDirectory(database, directory(enterpriseId, n, s.currency));
        const all = batches.flat();
        if (all.length > 0) {
          const file = join(scratch, `${enterpriseId}.ndjson`);
          writeFileSync(file, all.map((e) => JSON.stringify(e.wire)).join("\n") + "\n");
          expect(await importUsage(repository, enterpriseId, file)).toStrictEqual({ enterprise_id: enterpriseId, lines: all.length, recorded: 0, duplicates: all.length });
        }
        for (const [i, [start, end]] of windows.entries()) {
          expect(await sums(enterpriseId, start, end), `window [${start}, ${end}) after re-sending, re-importing`).toStrictEqual(before[i]);
        }
      }), { numRuns: STORAGE_RUNS });
    }, 600_000);

    // The batches above stay below one multi-row INSERT (256 rows): these are large enough to cross
    // several, with repeats inside them whose later copy sorts first in the table's key order.
    /** A new enterprise and `count` events from a fixed seed, for the deterministic tests below. */
    async function enterpriseWithEvents(currency: "CNY" | "USD", count: number, seed: number) {
      const n = ++runs;
      const enterpriseId = `prop-${dialect}-${n}`;
      await importDirectory(database, directory(enterpriseId, n, currency));
      return { enterpriseId, generated: fc.sample(fc.array(eventArb, { minLength: count, maxLength: count }), { numRuns: 1, seed })[0]! };
    }

    /** Imports these events as an NDJSON file. */
    async function importFile(enterpriseId: string, events: readonly Sent[]) {
      const path = join(scratch, `${enterpriseId}.ndjson`);
      writeFileSync(path, events.map((e) => JSON.stringify(e.wire)).join("\n") + "\n");
      return importUsage(repository, enterpriseId, path);
    }

    it("a batch of 1,000 and a file of 1,200 with repeats inside and of stored events count each first one once", async () => {
      const { enterpriseId, generated } = await enterpriseWithEvents("USD", 1600, 7);
      const fresh = generated.map((g, i) => toSent(g, `e${i}`));
      // A repeat of event i: a day earlier (so it sorts before the first copy) and with other figures.
      const repeatOf = (i: number) => toSent({ ...generated[i]!, offset: Math.max(0, generated[i]!.offset - DAY), input: 1n }, `e${i}`);
      const repeats = (count: number, first: number, step: number) => Array.from({ length: count }, (_, k) => repeatOf(first + step * k));
      const stored = fresh.slice(0, 300);
      expect(await send(enterpriseId, stored)).toStrictEqual({ recorded: 300, duplicates: 0 });
      const batch = [...fresh.slice(300, 1000), ...repeats(150, 300, 4), ...repeats(150, 0, 2)];
      expect(await send(enterpriseId, batch)).toStrictEqual({ recorded: 700, duplicates: 300 });
      const file = [...fresh.slice(1000, 1600), ...repeats(300, 1000, 2), ...repeats(300, 0, 3)];
      expect(await importFile(enterpriseId, file)).toStrictEqual({ enterprise_id: enterpriseId, lines: 1200, recorded: 600, duplicates: 600 });
      const counted = firstOfEachId([...stored, ...batch, ...file].map((e) => e.reference));
      expect(counted).toHaveLength(1600);
      for (const [start, end] of [[T0 - DAY, T0 + 11 * DAY], [T0 + 2 * DAY + 7, T0 + 6 * DAY + 3 * HOUR]] as const) {
        expect(await sums(enterpriseId, start, end), `window [${start}, ${end})`).toStrictEqual(referenceSums(counted, start, end));
      }
    }, 120_000);

    // Batches are put in the table's key order by one numeric sort while they span fewer than 256
    // days; these span about two years each, which takes the other way.
    it("a batch and a file spanning two years count every event", async () => {
      const { enterpriseId, generated } = await enterpriseWithEvents("CNY", 600, 11);
      const spread = generated.map((g, i) => toSent({ ...g, offset: (i % 300) * 2 * DAY + g.offset }, `e${i}`));
      expect(await send(enterpriseId, spread.slice(0, 300))).toStrictEqual({ recorded: 300, duplicates: 0 });
      expect(await importFile(enterpriseId, spread.slice(300))).toStrictEqual({ enterprise_id: enterpriseId, lines: 300, recorded: 300, duplicates: 0 });
      const counted = spread.map((e) => e.reference);
      for (const [start, end] of [[T0, T0 + 180 * DAY], [T0 + 300 * DAY + 5, T0 + 480 * DAY], [T0 + 500 * DAY, T0 + 620 * DAY]] as const) {
        expect(await sums(enterpriseId, start, end), `window [${start}, ${end})`).toStrictEqual(referenceSums(counted, start, end));
      }
    }, 120_000);
    // A file in time order, in many small chunks: u1's stored rows all come before its first day in
    // the file (its rows are the file's sums on top of them), u2 has a stored row on that day, u3
    // has none, and repeats in it of its own events come after its first rows are written; a stored
    // event of u2's comes again.
    it("a file in time order: its running totals on stored rows before it, beside stored rows on its days, with repeats", async () => {
      const { enterpriseId, generated } = await enterpriseWithEvents("USD", 240, 13);
      const event = (i: number, member: number, offset: number, input = generated[i]!.input) =>
        toSent({ ...generated[i]!, member, offset, input }, `e${i}`);
      const stored = [
        ...Array.from({ length: 60 }, (_, k) => event(k, 0, k * HOUR)), // u1: days 0 to 2
        ...Array.from({ length: 60 }, (_, k) => event(60 + k, 1, k * 2 * HOUR)), // u2: days 0 to 4
      ];
      expect(await send(enterpriseId, stored)).toStrictEqual({ recorded: 120, duplicates: 0 });
      const fresh = Array.from({ length: 120 }, (_, k) => event(120 + k, k % 3, 3 * DAY + k * HOUR)); // days 3 to 7
      const repeats = [
        ...[200, 203, 212, 230].map((i) => event(i, 2, 3 * DAY + (i - 120) * HOUR + 1, 1n)), // u3's, other figures
        event(70, 1, 5 * DAY + 30, 2n), // a stored one of u2's
      ];
      const file = [...fresh, ...repeats].sort((a, b) => a.reference.timestamp - b.reference.timestamp);
      const path = join(scratch, `${enterpriseId}.ndjson`);
      writeFileSync(path, file.map((e) => JSON.stringify(e.wire)).join("\n") + "\n");
      const ingestionsBefore = await repository.ingestionCount();
      expect(await importUsage(repository, enterpriseId, path, undefined, { batchEvents: 7, chunkEvents: 14 }))
        .toStrictEqual({ enterprise_id: enterpriseId, lines: 125, recorded: 120, duplicates: 5 });
      // 18 batches (17 of 7 events, one of 6): a chunk ends with the batch that reaches 14 events, so 9 chunks, a commit each.
      expect(await repository.ingestionCount()).toBe(ingestionsBefore + 9);
      const counted = firstOfEachId([...stored, ...file].map((e) => e.reference));
      for (const [start, end] of [[T0, T0 + 9 * DAY], [T0 + DAY + 5, T0 + 6 * DAY + 7], [T0 + 2 * DAY + HOUR, T0 + 3 * DAY + 2 * HOUR],
        [T0 + 3 * DAY, T0 + 4 * DAY], [T0 + 4 * DAY, T0 + 8 * DAY], [T0 + 6 * DAY + 1, T0 + 7 * DAY + 12 * HOUR]] as const) {
        expect(await sums(enterpriseId, start, end), `window [${start}, ${end})`).toStrictEqual(referenceSums(counted, start, end));
      }
    }, 120_000);

    // Each writer keeps the running-total rows it wrote last (LatestRows) and reads a member's rows
    // from them instead of the store while no other ingestion came between. A second writer (another
    // process) comes between here after every batch, on the same members and days.
    it("a second writer between two ingestions: each adds to the other's rows, not to its own memory of them", async () => {
      const { enterpriseId, generated } = await enterpriseWithEvents("USD", 200, 17);
      // Batch k on day k: a writer's next batch comes after days it did not write itself.
      const events = generated.map((g, i) => toSent({ ...g, offset: Math.floor(i / 20) * DAY + (g.offset % DAY) }, `e${i}`));
      const secondDatabase = openDatabase(testDb.url);
      try {
        const second = new UsageRepository(secondDatabase);
        for (let at = 0; at < events.length; at += 20) {
          const writer = (at / 20) % 2 === 0 ? repository : second;
          const batch = events.slice(at, at + 20).map((e, i) => ({ event: checkUsageEvent(e.wire as RawUsageEvent, `events[${i}]`), where: `events[${i}]` }));
          expect(await recordUsage(writer, enterpriseId, batch)).toStrictEqual({ recorded: 20, duplicates: 0 });
        }
      } finally {
        await secondDatabase.close();
      }
      const counted = events.map((e) => e.reference);
      for (const [start, end] of [[T0, T0 + 10 * DAY], [T0 + 3 * DAY, T0 + 8 * DAY], [T0 + 2 * DAY + 5, T0 + 9 * DAY + HOUR]] as const) {
        expect(await sums(enterpriseId, start, end), `window [${start}, ${end})`).toStrictEqual(referenceSums(counted, start, end));
      }
    }, 120_000);

    it("an ingestion refused at its end leaves nothing of its rows behind, in the store or in memory", async () => {
      const { enterpriseId } = await enterpriseWithEvents("USD", 0, 19);
      // Below the API (its per-event ceiling is far lower): events of any size up to the store's 2^63 - 1.
      const events = (list: Array<[eventId: string, userId: string, offset: number, inputTokens: bigint]>) => list.map(([eventId, userId, offset, inputTokens]) => ({
        where: eventId,
        reference: {
          event_id: eventId, user_id: userId, model_name: "m-a", model_type: "Chat", model_source: "Builtin", timestamp: T0 + offset,
          input_tokens: inputTokens, output_tokens: 0n, basic_micros: 0n, pay_go_micros: 0n,
        } satisfies ReferenceEvent,
        event: {
          eventId, userId, modelName: "m-a", modelType: "Chat", modelSource: "Builtin", timestamp: T0 + offset, inputTokens, outputTokens: 0n,
          basicMicros: 0n, payGoMicros: 0n,
        },
      }));
      const first = events([["a", "u1", HOUR, 5n], ["b", "u2", HOUR, 2n ** 63n - 1n], ["c", "u2", 2 * HOUR, 2n ** 63n - 1n]]);
      expect(await recordUsage(repository, enterpriseId, first)).toStrictEqual({ recorded: 3, duplicates: 0 });
      // u1's new row is made first (member keys in order); u2's would pass 2^64 - 1, which refuses the whole batch.
      await expect(recordUsage(repository, enterpriseId, events([["d", "u1", DAY, 7n], ["e", "u2", DAY, 2n]]))).rejects.toMatchObject({ code: 4001 });
      // Another writer commits in between, taking the refused ingestion's place in the store's count.
      const secondDatabase = openDatabase(testDb.url);
      const between = events([["g", "u3", DAY, 3n]]);
      try {
        expect(await recordUsage(new UsageRepository(secondDatabase), enterpriseId, between)).toStrictEqual({ recorded: 1, duplicates: 0 });
      } finally {
        await secondDatabase.close();
      }
      const last = events([["f", "u1", 2 * DAY, 11n]]);
      expect(await recordUsage(repository, enterpriseId, last)).toStrictEqual({ recorded: 1, duplicates: 0 });
      const counted = [...first, ...between, ...last].map((e) => e.reference);
      for (const [start, end] of [[T0, T0 + 3 * DAY], [T0 + DAY, T0 + 3 * DAY]] as const) {
        expect(await sums(enterpriseId, start, end), `window [${start}, ${end})`).toStrictEqual(referenceSums(counted, start, end));
      }
    }, 120_000);
  });

  describe("REST: batch-record, then user-model-usage", () => {
    let svc: TestService;
    let runs = 0;

    beforeAll(async () => {
      svc = await startTestService(dialect);
    });

    afterAll(async () => {
      await svc?.close();
    });

    async function post(path: string, token: string, body: unknown): Promise<{ status: number; json: any }> {
      const res = await fetch(svc.baseUrl + path, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: parseJsonBig(await res.text()) };
    }

    it("every answer equals the bigint reference, exactly; re-sending and re-importing change nothing", async () => {
      await fc.assert(fc.asyncProperty(scenarioArb(120), async (s) => {
        const n = ++runs;
        const enterpriseId = `prop-rest-${dialect}-${n}`;
        const people = members(n);
        await importDirectory(svc.database, directory(enterpriseId, n, s.currency));
        const token = await svc.token(["usage:write", "statistics:read"], enterpriseId);

        const batches = buildBatches(s);
        const seen = new Set<string>();
        for (const batch of batches) {
          if (batch.length === 0) continue;
          const reply = await post("/openapi/v1/usage/events/batch-record", token, { events: batch.map((e) => e.wire) });
          expect(reply.json).toStrictEqual({ code: 0, message: "success", request_id: expect.any(String), data: expectedCounts(batch, seen) });
        }
        const counted = firstOfEachId(batches.flat().map((e) => e.reference));

        // Named by id in s.byId order, then by e-mail; an unknown id and e-mail ride along.
        const userIds = [...s.byId.map((i) => people[i]!.user_id), "ghost"];
        const emails = [...s.byEmail.map((i) => (s.upperEmails ? people[i]!.email.toUpperCase() : people[i]!.email.toLowerCase())), "ghost@nowhere.example"];
        const order = [...new Set([...s.byId, ...s.byEmail])];
        const expectAnswer = (start: number, end: number) => {
          const sums = referenceSums(counted, start, end);
          return {
            code: 0, message: "success", request_id: expect.any(String),
            data: {
              items: order.map((i) => ({
                ...people[i]!,
                model_usage: sums.filter((x) => x.user_id === people[i]!.user_id).map((x) => expectedModelUsage(x, s.currency)),
                former_member: false,
              })),
              not_found_user_ids: ["ghost"],
              not_found_emails: ["ghost@nowhere.example"],
            },
          };
        };
        const check = async (label: string) => {
          for (const w of s.windows) {
            const [start, end] = resolveWindow(w, counted);
            const reply = await post("/openapi/v1/statistics/user-model-usage", token, { start_time: start, end_time: end, user_ids: userIds, emails });
            expect(reply.json, `${label}: window [${start}, ${end})`).toStrictEqual(expectAnswer(start, end));
          }
        };
        await check("after recording");

        const again = batches[s.resendBatch]!;
        if (again.length > 0) {
          const reply = await post("/openapi/v1/usage/events/batch-record", token, { events: again.map((e) => e.wire) });
          expect(reply.json.data).toStrictEqual({ recorded: 0, duplicates: again.length });
        }
        await importDirectory(svc.database, directory(enterpriseId, n, s.currency));
        await check("after re-sending a batch and re-importing the directory");
      }), { numRuns: REST_RUNS });
    }, 600_000);
  });
});
