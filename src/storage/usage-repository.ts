// Usage storage: raw events inserted idempotently, the pre-aggregates of exactly the events added, and the windowed sums.
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { CompiledQuery, sql, type Kysely, type RawBuilder, type Selectable } from "kysely";
import { invalidParameter } from "../domain/errors.js";
import { modelKey, type EventValue, type ModelIdentity } from "../domain/usage-event.js";
import { decimalValue, EVENTS, ExactSums, type MemberModelSums, SUM_LIMIT_MESSAGE, SumLimitError } from "../domain/usage-totals.js";
import type { PeriodFigures } from "../domain/report-cells.js";
import { WindowSums } from "../domain/usage-window-sums.js";
import { dayOf, type WindowPlan } from "../domain/usage-window.js";
import { HOUR_SECONDS } from "../domain/local-time.js";
import type { EnterpriseTable, MemberTable, Schema } from "./schema.js";
import type { Database, Dialect } from "./database.js";
import { among, chunks, insertText, StatementTexts, type BulkStore } from "./bulk-statements.js";
import { addToRunningTotals, DaySums, LatestRows } from "./usage-running-totals.js";
import { addRowsToWindow, entryCount, forEachEntry } from "./usage-sums-codec.js";
import { currentLayout, UsageRollups } from "./usage-rollups.js";
import { RollupDelta, RollupPeriods, type RollupLayout } from "../domain/usage-rollup.js";

export type MemberRow = Omit<Selectable<MemberTable>, "enterprise_id">;

const MEMBER_COLUMNS = ["member_key", "user_id", "email", "email_folded", "account_type", "removed_at"] as const;

export type EnterpriseSettings = Pick<Selectable<EnterpriseTable>, "currency" | "time_zone" | "directory_version"> & {
  /** Undefined when not of this version (currentLayout): its usage is then read raw. */
  layout: RollupLayout | undefined;
};

export interface UsageEventRow {
  eventId: string;
  memberKey: number;
  modelId: number;
  ts: number;
  day: number; // the UTC day of ts (dayOf)
  inputTokens: EventValue;
  outputTokens: EventValue;
  basicMicros: EventValue;
  payGoMicros: EventValue;
}

const SUM_COLUMNS = ["input_tokens", "output_tokens", "basic_micros", "pay_go_micros"] as const;
const EVENT_COLUMNS = ["day", "member_key", "ts", "event_id", "enterprise_id", "model_id", "input_tokens", "output_tokens", "basic_micros", "pay_go_micros"] as const;


interface SharedCaches {
  /** Model ids never change once committed, so they are cached for the life of the process. */
  modelIds: Map<string, number>;
  models: Map<number, ModelIdentity>;
  texts: StatementTexts;
  latestRows: LatestRows;
}

export class UsageRepository {
  private readonly db: Kysely<Schema>;
  private readonly dialect: Dialect;
  private readonly bulk: BulkStore;
  readonly rollups: UsageRollups;

  constructor(
    private readonly database: Pick<Database, "db" | "dialect" | "writeTransaction" | "observer" | "faultOf">,
    private readonly caches: SharedCaches = { modelIds: new Map(), models: new Map(), texts: new StatementTexts(), latestRows: new LatestRows() },
  ) {
    this.db = database.db;
    this.dialect = database.dialect;
    this.bulk = { db: this.db, dialect: this.dialect, texts: caches.texts };
    this.rollups = new UsageRollups(this.bulk);
  }

  /** The members of an enterprise among these user_ids, former members included (a query's named members). */
  async membersByUserIds(enterpriseId: string, userIds: readonly string[]): Promise<MemberRow[]> {
    if (userIds.length === 0) return [];
    return this.db.selectFrom("member").select(MEMBER_COLUMNS)
      .where("enterprise_id", "=", enterpriseId).where(among(this.dialect, "user_id", userIds, "text")).execute();
  }

  /** As membersByUserIds, keys only (an ingestion's): read from the identity index alone, not a table row each. */
  async memberKeysByUserIds(enterpriseId: string, userIds: readonly string[]): Promise<Array<Pick<MemberRow, "member_key" | "user_id">>> {
    if (userIds.length === 0) return [];
    return this.db.selectFrom("member").select(["member_key", "user_id"])
      .where("enterprise_id", "=", enterpriseId).where(among(this.dialect, "user_id", userIds, "text")).execute();
  }

  /** The current members with these folded e-mails: a former member's e-mail matches no one. */
  async membersByFoldedEmails(enterpriseId: string, emailsFolded: readonly string[]): Promise<MemberRow[]> {
    if (emailsFolded.length === 0) return [];
    return this.db.selectFrom("member").select(MEMBER_COLUMNS)
      .where("enterprise_id", "=", enterpriseId).where("email_folded", "in", emailsFolded).where("removed_at", "is", null).execute();
  }

  /** The members with these keys (the enterprise's only, former members included), unordered. */
  async membersByKeys(enterpriseId: string, memberKeys: readonly number[]): Promise<MemberRow[]> {
    if (memberKeys.length === 0) return [];
    return this.db.selectFrom("member").select(MEMBER_COLUMNS)
      .where("enterprise_id", "=", enterpriseId).where(among(this.dialect, "member_key", memberKeys, "bigint")).execute();
  }

  /**
   * An enterprise's settings in one statement (a usage query's every statement counts). A missing enterprise is bad input naming
   * `option` (a command's --enterprise), else a broken store (a caller's token named it).
   */
  async enterpriseSettings(enterpriseId: string, option?: string): Promise<EnterpriseSettings> {
    const row = await this.db.selectFrom("enterprise as e").leftJoin("usage_layout as l", "l.enterprise_id", "e.enterprise_id")
      .select(["e.currency", "e.time_zone", "e.directory_version", "l.version", "l.time_zone as layout_zone", "l.hour_phase"])
      .where("e.enterprise_id", "=", enterpriseId).executeTakeFirst();
    if (row) {
      const { version, layout_zone, hour_phase, ...settings } = row;
      return { ...settings, layout: currentLayout({ version, time_zone: layout_zone, hour_phase }) };
    }
    if (option) throw invalidParameter(`${option}: enterprise "${enterpriseId}" does not exist (import a directory file first)`);
    throw new Error(`enterprise ${enterpriseId} of a valid token does not exist`);
  }

  /**
   * As enterpriseSettings, the rollups first brought up to date with pending events (API batches'): what reads the rollups asks this.
   * When they cannot be added (another ingestion holds the write lock past the busy timeout, a rebuild say, or the disk is full),
   * without a layout: the usage is then read raw, exactly.
   */
  async settingsWithRollups(enterpriseId: string, option?: string): Promise<EnterpriseSettings> {
    const settings = await this.enterpriseSettings(enterpriseId, option);
    if (!settings.layout || (await this.rollups.pending(enterpriseId)).rows === 0) return settings;
    try {
      await this.addPendingRollups(enterpriseId);
      return settings;
    } catch (error) {
      const fault = this.database.faultOf(error)?.kind;
      if (fault !== "busy" && fault !== "full") throw error;
      this.database.observer.rollupsDeferred(fault);
      return { ...settings, layout: undefined };
    }
  }

  /** The ids of these models (by `modelKey`), making the new ones; `identity(i)` is asked only for a key new to this process. */
  async resolveModels(keys: readonly string[], identity: (index: number) => ModelIdentity): Promise<ReadonlyMap<string, number>> {
    const missing = new Map<string, ModelIdentity>();
    for (let i = 0; i < keys.length; i++) {
      if (!this.caches.modelIds.has(keys[i]!) && !missing.has(keys[i]!)) missing.set(keys[i]!, identity(i));
    }
    if (missing.size === 0) return this.caches.modelIds;
    await this.db.insertInto("usage_model").values([...missing.values()]).onConflict((oc) => oc.doNothing()).execute();
    return (await this.loadModels()).modelIds;
  }

  /** One reload at most, when an id is new to this process. */
  async modelsById(modelIds: Iterable<number>): Promise<ReadonlyMap<number, ModelIdentity>> {
    for (const id of modelIds) {
      if (!this.caches.models.has(id)) return (await this.loadModels()).models;
    }
    return this.caches.models;
  }

  private async loadModels(): Promise<SharedCaches> {
    for (const row of await this.db.selectFrom("usage_model").selectAll().execute()) {
      this.caches.modelIds.set(modelKey(row.model_name, row.model_type, row.model_source), Number(row.model_id));
      this.caches.models.set(Number(row.model_id), { model_name: row.model_name, model_type: row.model_type, model_source: row.model_source });
    }
    return this.caches;
  }

  /**
   * Runs `work` as one ingestion in one transaction, with this repository bound to it (SQLite has one connection: a read outside would
   * wait forever). Only the events actually inserted are summed, so a repeat never counts twice; returns how many. Waits for the write
   * lock at most the busy timeout (then a busy StoreFault, nothing done), or, `unbounded`, as long as it takes. `beforeCommit` may
   * throw to undo it all (a call that ended meanwhile).
   */
  async ingest(work: (tx: UsageRepository) => Promise<void>, { unbounded = false, beforeCommit = () => {} } = {}): Promise<number> {
    try {
      return await this.database.writeTransaction(async (trx) => {
        // PostgreSQL: one ingestion at a time, so that two never read and rewrite the same row at once.
        if (this.dialect === "postgres") await this.takeIngestionLock(trx);
        const { ingestions } = await trx.updateTable("usage_ingestion_count").set((eb) => ({ ingestions: eb("ingestions", "+", 1) }))
          .where("id", "=", 1).returning("ingestions").executeTakeFirstOrThrow();
        this.caches.latestRows.begin(Number(ingestions));
        const tx = new UsageRepository({ ...this.database, db: trx }, this.caches);
        tx.daySums = new DaySums();
        tx.ingestion = Number(ingestions);
        await work(tx);
        await tx.writeDaySums();
        await tx.writeRollups(true);
        beforeCommit();
        return tx.added;
      }, { unbounded });
    } catch (error) {
      // Models and running-total rows made inside a rolled-back transaction no longer exist: forget them.
      this.caches.modelIds.clear();
      this.caches.models.clear();
      this.caches.latestRows.clear();
      if (error instanceof SumLimitError) throw invalidParameter(SUM_LIMIT_MESSAGE);
      throw error;
    }
  }

  /** An import chunk: waits for the write lock as long as it takes, then leaves it free a moment (SQLite hands it to whoever asks first). */
  async ingestImportChunk(work: (tx: UsageRepository) => Promise<void>): Promise<number> {
    const added = await this.ingest(work, { unbounded: true });
    if (this.dialect === "sqlite") await sleep(CHUNK_PAUSE_MS);
    return added;
  }

  /** `usage rebuild`, as one ingestion, so a live ingestion waits for it and then adds to the rebuilt rows. */
  async rebuild(enterpriseId: string, progress?: (events: number) => void): Promise<number> {
    let events = 0;
    await this.ingest(async (tx) => {
      tx.caches.latestRows.clear();
      tx.heldRollups.set(enterpriseId, new HeldRollups(await tx.rollups.restart(enterpriseId), false));
      for await (const page of tx.allEvents(enterpriseId)) {
        await tx.holdSums(enterpriseId, page);
        events += page.length;
        progress?.(events);
      }
    }, { unbounded: true });
    return events;
  }

  /**
   * Before a batch of `incoming` events that would take the enterprise's pending events past MAX_PENDING_EVENTS, or its pending rows
   * past MAX_PENDING_ROWS: adds them to the rollups in an ingestion of their own, committed whatever becomes of the batch. Folded inside
   * it, they were undone with it when its call's deadline passed first, and so for every such batch after it: a client with a short
   * deadline could never record again.
   */
  async makeRoomForPending(enterpriseId: string, incoming: number): Promise<void> {
    if (incoming < PENDING_BELOW && !roomToHold(await this.rollups.pending(enterpriseId), incoming)) await this.addPendingRollups(enterpriseId);
  }

  /** Adds the enterprise's pending rollup rows (API batches') to its rollups, as one ingestion: a report's first step when there are any. */
  async addPendingRollups(enterpriseId: string): Promise<void> {
    await this.ingest(async (tx) => {
      const layout = await tx.rollups.layoutForIngestion(enterpriseId);
      if (layout) tx.heldRollups.set(enterpriseId, new HeldRollups(layout, false));
    });
  }

  /**
   * PostgreSQL, after an import: each chunk rewrote running-total and rollup rows, which queries read past until autovacuum comes, and
   * the new events' pages are not all-visible, so index-only scans would visit the heap.
   */
  async tidyAfterImport(): Promise<void> {
    if (this.dialect === "postgres") await sql`vacuum (analyze) usage_event, usage_running_total, usage_rollup, usage_rollup_members`.execute(this.db);
  }

  async eventCount(enterpriseId: string): Promise<number> {
    const row = await this.db.selectFrom("usage_event").select((eb) => eb.fn.countAll<number | string>().as("n"))
      .where("enterprise_id", "=", enterpriseId).executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Waited for at most the lock_timeout, the wait reported to the observer. */
  private async takeIngestionLock(trx: Kysely<Schema>): Promise<void> {
    const { rows } = await sql<{ taken: boolean }>`select pg_try_advisory_xact_lock(${sql.lit(INGESTION_LOCK)}) as taken`.execute(trx);
    if (rows[0]!.taken) return;
    const started = performance.now();
    try {
      await sql`select pg_advisory_xact_lock(${sql.lit(INGESTION_LOCK)})`.execute(trx);
    } catch (error) {
      // A timeout only when it gave up at the busy timeout: a wait its lost connection ended is counted as the store fault it is.
      if (this.database.faultOf(error)?.kind === "busy") this.database.observer.lockWaited((performance.now() - started) / 1000, false);
      throw error;
    }
    this.database.observer.lockWaited((performance.now() - started) / 1000, true);
  }

  /** Committed ingestions (API batches and import chunks) by every process. */
  async ingestionCount(): Promise<number> {
    const row = await this.db.selectFrom("usage_ingestion_count").select("ingestions").where("id", "=", 1).executeTakeFirst();
    return Number(row?.ingestions ?? 0);
  }

  private daySums: DaySums | undefined;
  /** Per enterprise, this ingestion's share of its rollups; undefined without a current layout (no pre-aggregates kept). */
  private readonly heldRollups = new Map<string, HeldRollups | undefined>();
  /** The store's count of ingestions with this one. */
  private ingestion = 0;
  private added = 0;

  /** Adds raw rows (only inside `ingest`), skipping a repeated (enterprise_id, event_id), and holds the sums of those it added. */
  async insertEvents(enterpriseId: string, rows: readonly UsageEventRow[]): Promise<void> {
    if (!this.daySums) throw new Error("insertEvents runs only inside ingest()");
    // Before the rows: whether the enterprise had events decides its layout.
    if (!this.heldRollups.has(enterpriseId)) {
      const layout = await this.rollups.layoutForIngestion(enterpriseId);
      this.heldRollups.set(enterpriseId, layout && new HeldRollups(layout, true));
    }
    const fresh = await this.insertNew(enterpriseId, rows);
    this.added += fresh.length;
    await this.holdSums(enterpriseId, fresh);
  }

  /** Holds events' sums for the pre-aggregates (none without a current layout), written once many are held: memory stays bounded. */
  private async holdSums(enterpriseId: string, events: readonly StoredEvent[]): Promise<void> {
    const rollups = this.heldRollups.get(enterpriseId);
    if (!rollups) return;
    for (const e of events) this.daySums!.add(e.memberKey, e.modelId, e.day, e.inputTokens, e.outputTokens, e.basicMicros, e.payGoMicros);
    rollups.add(events);
    if (this.daySums!.size >= FLUSH_DAY_SUMS) await this.writeDaySums();
    let held = 0;
    for (const share of this.heldRollups.values()) held += share?.delta.size ?? 0;
    if (held >= FLUSH_ROLLUP_EVENTS) await this.writeRollups(false);
  }

  private async writeDaySums(): Promise<void> {
    if (this.daySums!.size === 0) return;
    await addToRunningTotals(this.bulk, this.caches.latestRows, this.daySums!);
    this.daySums!.clear();
  }

  /**
   * At the ingestion's `end`, a small one's events are held pending instead, one row, while the enterprise's pending events stay within
   * MAX_PENDING_EVENTS; else its pending rows are added to the rollups with them.
   */
  private async writeRollups(end: boolean): Promise<void> {
    for (const [enterpriseId, share] of this.heldRollups) {
      if (!share) continue;
      if (end && share.events) {
        if (share.events.length === 0) continue;
        if (roomToHold(await this.rollups.pending(enterpriseId), share.events.length)) {
          await this.rollups.holdPending(enterpriseId, this.ingestion, share.events);
          continue;
        }
      }
      share.sum();
      if (end && !share.wide) await this.rollups.takePending(enterpriseId, share.delta);
      if (share.delta.size > 0) await this.rollups.add(enterpriseId, share.delta.take());
    }
  }

  /**
   * Inserts and returns the rows not stored yet (the first of a repeat wins), in key order so consecutive inserts share pages. A batch
   * whose INSERTs add fewer rows than they carry is undone (a savepoint) and inserted again without repeats: the usual one pays nothing.
   */
  private async insertNew(enterpriseId: string, rows: readonly UsageEventRow[]): Promise<UsageEventRow[]> {
    let fresh = inKeyOrder(rows);
    await sql`savepoint usage_batch`.execute(this.db);
    if (!(await this.insertAll(enterpriseId, fresh))) {
      await sql`rollback to savepoint usage_batch`.execute(this.db);
      fresh = inKeyOrder(await this.withoutKnownEvents(enterpriseId, rows));
      await this.insertAll(enterpriseId, fresh);
    }
    await sql`release savepoint usage_batch`.execute(this.db);
    return fresh;
  }

  /** False as soon as an INSERT adds fewer rows than it was given (it met a repeat). */
  private async insertAll(enterpriseId: string, rows: readonly UsageEventRow[]): Promise<boolean> {
    for (const chunk of chunks(rows)) {
      const result = await this.db.executeQuery(CompiledQuery.raw(
        insertText(this.bulk, "usage_event", EVENT_COLUMNS, ["enterprise_id", "event_id"], [], chunk.length), eventParameters(enterpriseId, chunk)));
      if (Number(result.numAffectedRows ?? 0n) !== chunk.length) return false;
    }
    return true;
  }

  private async withoutKnownEvents(enterpriseId: string, rows: readonly UsageEventRow[]): Promise<UsageEventRow[]> {
    const seen = new Set<string>();
    for (const part of chunks(rows)) {
      const stored = await this.db.selectFrom("usage_event").select("event_id")
        .where("enterprise_id", "=", enterpriseId).where("event_id", "in", part.map((r) => r.eventId)).execute();
      for (const { event_id } of stored) seen.add(event_id);
    }
    return rows.filter((row) => !seen.has(row.eventId) && (seen.add(row.eventId), true));
  }

  /**
   * Sums per member (by position in `memberKeys`) and model: running totals through the later day minus the earlier, plus or minus
   * the partial days' raw events, in one statement (one snapshot) returning few values whatever the members: each sign's totals as
   * one blob beside "member_key,length" rows, each raw range as one text of entries (printed exactly, far cheaper than a row an event).
   */
  async sumUsage(memberKeys: readonly number[], plan: WindowPlan): Promise<WindowSums> {
    if (memberKeys.length === 0) return new WindowSums(0);
    const postgres = this.dialect === "postgres";
    const members = sql.join(memberKeys.map((k, i) => (postgres && i === 0 ? sql`(cast(${k} as bigint))` : sql`(${k})`)));
    const noBlob = postgres ? sql`cast(null as bytea)` : sql`null`;
    const noText = postgres ? sql`cast(null as text)` : sql`null`;
    const ctes = [sql`m(k) as (values ${members})`];
    const parts = [];
    if (plan.runningTotals) {
      const through = (day: number) => sql`(select totals from usage_running_total t
        where t.member_key = m.k and t.day <= ${day} order by t.day desc limit 1)`;
      // The totals end to end, and "key,length" per row in the same order (a row without totals is in neither).
      const totalsOf = (column: string) => postgres
        ? sql`string_agg(${sql.ref(column)}, ''::bytea order by k)`
        : sql`cast(group_concat(${sql.ref(column)}, '') as blob)`;
      const rowsOf = (column: string) => postgres
        ? sql`string_agg(k::text || ',' || length(${sql.ref(column)})::text, ',' order by k)`
        : sql`group_concat(k || ',' || length(${sql.ref(column)}), ',')`;
      // Materialized: merged into the select below, each seek would run once for the totals and again for their lengths.
      ctes.push(sql`running as materialized (select m.k as k, ${through(plan.runningTotals.plusThrough)} as plus,
        ${through(plan.runningTotals.minusThrough)} as minus from m)`);
      parts.push(sql`select ${totalsOf("plus")} as plus, ${rowsOf("plus")} as plus_rows, ${totalsOf("minus")} as minus,
          ${rowsOf("minus")} as minus_rows, 0 as sign, ${noText} as events from running`);
    }
    const entry = postgres
      ? sql`concat_ws(',', member_key, model_id, input_tokens, output_tokens, basic_micros, pay_go_micros)`
      : sql`member_key || ',' || model_id || ',' || input_tokens || ',' || output_tokens || ',' || basic_micros || ',' || pay_go_micros`;
    const eventsOf = postgres ? sql`string_agg(${entry}, ';')` : sql`group_concat(${entry}, ';')`;
    for (const { from, to, sign } of plan.raw) {
      parts.push(sql`select ${noBlob} as plus, ${noText} as plus_rows, ${noBlob} as minus, ${noText} as minus_rows, ${sql.lit(sign)} as sign, ${eventsOf} as events
        from usage_event where day = ${dayOf(from)} and member_key in (select k from m) and ts >= ${from} and ts < ${to}`);
    }
    const { rows } = await sql<WindowRow>`with ${sql.join(ctes)} ${sql.join(parts, sql` union all `)}`.execute(this.db);
    const positions = new Map(memberKeys.map((key, position) => [key, position]));
    const memberOf = (memberKey: number) => positions.get(memberKey)!;
    const sums = new WindowSums(memberKeys.length);
    for (const row of rows) {
      if (row.plus !== null) addRowsToWindow(sums, row.plus, row.plus_rows ?? "", false, memberOf);
      if (row.minus !== null) addRowsToWindow(sums, row.minus, row.minus_rows ?? "", true, memberOf);
      if (row.events !== null) addEventText(row.events, Number(row.sign) < 0, memberOf, sums);
    }
    return sums;
  }

  /** Each (member, model)'s sums over [start, end) (of `memberKeys` only, when given). */
  async memberModelSums(enterpriseId: string, start: number, end: number, memberKeys?: readonly number[]): Promise<MemberModelSums[]> {
    return this.rawSums(enterpriseId, [{ start, end }], memberKeys, "pair");
  }

  /** Each model's sums and distinct members in each of some consecutive ranges: a report's buckets by model where no rollup fits. */
  async modelSums(enterpriseId: string, ranges: ReadonlyArray<{ start: number; end: number }>, memberKeys?: readonly number[])
    : Promise<Array<PeriodFigures & { range: number }>> {
    return this.rawSums(enterpriseId, ranges, memberKeys, "model");
  }

  /**
   * Raw events summed per (member, model) or per (range, model) with its distinct members, sent back as one text of ";"-joined groups.
   * SQLite's sum fails past int64 ("integer overflow"); the window is then summed again with each value's bits above and below the
   * 20th apart: a window's sum is at most 2^64 - 1, so neither half overflows.
   */
  private async rawSums(enterpriseId: string, ranges: ReadonlyArray<{ start: number; end: number }>, memberKeys: readonly number[] | undefined,
    by: "pair" | "model", form: "whole" | "halves" = "whole"): Promise<RawGroupSums[]> {
    if (memberKeys?.length === 0) return [];
    const postgres = this.dialect === "postgres";
    const start = ranges[0]!.start;
    const end = ranges[ranges.length - 1]!.end;
    const columns = form === "whole" ? SUM_COLUMNS.map((c) => ({ name: c, sum: sql`sum(${sql.ref(c)})` }))
      : SUM_COLUMNS.flatMap((c) => [{ name: `${c}_high`, sum: sql`sum(${sql.ref(c)} >> 20)` }, { name: `${c}_low`, sum: sql`sum(${sql.ref(c)} & 1048575)` }]);
    const names = ["group_key", "model_id", ...(by === "model" ? ["members"] : []), "events", ...columns.map((c) => c.name)];
    const events = names.indexOf("events"); // the sums follow
    // SQLite's printf writes the integers faster than || joins them.
    const fields = sql.join(names.map((c) => sql.ref(c)));
    const group = postgres ? sql`concat_ws(',', ${fields})` : sql`printf(${names.map(() => "%d").join(",")}, ${fields})`;
    const [keys, groupBy] = by === "pair" ? [sql`member_key as group_key`, sql`member_key, model_id`]
      : [sql`${rangeOf(ranges)} as group_key, count(distinct member_key) as members`, sql`group_key, model_id`];
    const onlyMembers = memberKeys === undefined ? sql`true` : among(this.dialect, "member_key", memberKeys, "bigint");
    let row: { groups: string | null } | undefined;
    try {
      ({ rows: [row] } = await sql<{ groups: string | null }>`select ${postgres ? sql`string_agg(${group}, ';')` : sql`group_concat(${group}, ';')`} as groups
        from (select ${keys}, model_id, count(*) as events, ${sql.join(columns.map((c) => sql`${c.sum} as ${sql.ref(c.name)}`))}
          from usage_event where day >= ${dayOf(start)} and day <= ${dayOf(end - 1)} and ts >= ${start} and ts < ${end}
          and ${this.ofEnterprise(enterpriseId)} and ${onlyMembers}
          group by ${groupBy}) as group_sums`.execute(this.db));
    } catch (error) {
      if (form === "halves" || !(error instanceof Error && error.message === "integer overflow")) throw error;
      return this.rawSums(enterpriseId, ranges, memberKeys, by, "halves");
    }
    const groups: RawGroupSums[] = [];
    if (!row?.groups) return groups;
    const sums = new ExactSums(entryCount(row.groups)); // sized once: growing it a doubling at a time cost an export 1%
    forEachEntry(row.groups, names.length, (values) => {
      const row = sums.newRow();
      for (let i = 0; i < SUM_COLUMNS.length; i++) {
        if (form === "whole") sums.addValue(row, i, values[events + 1 + i]!);
        else sums.addBig(row, i, (BigInt(values[events + 1 + 2 * i]!) << 20n) + BigInt(values[events + 2 + 2 * i]!)); // the bits above and below the 20th
      }
      sums.add(row, EVENTS, values[events] as number);
      const key = values[0] as number;
      groups.push({ memberKey: key, range: key, modelId: values[1] as number, memberCount: by === "model" ? values[2] as number : 1, sums, row });
    });
    return groups;
  }

  /**
   * SQL for an event of the enterprise. SQLite, without statistics, would take the equality to the identity index (enterprise_id,
   * event_id) and read the enterprise's every event; the unary plus keeps it off, so a window is a range of the primary key.
   */
  private ofEnterprise(enterpriseId: string) {
    return this.dialect === "postgres" ? sql`enterprise_id = ${enterpriseId}` : sql`+enterprise_id = ${enterpriseId}`;
  }

  /** Keyset paging, a page a statement, so the scan never holds a read open. */
  private async *allEvents(enterpriseId: string, pageSize = 20_000): AsyncGenerator<StoredEvent[]> {
    let after: RawEventRow | undefined;
    for (;;) {
      const from = after === undefined ? sql`true`
        : sql`(day, member_key, ts, event_id) > (${after.day}, ${after.member_key}, ${after.ts}, ${after.event_id})`;
      // The values as text: exact at any size (a driver's number is not past 2^53).
      const { rows } = await sql<RawEventRow>`select day, member_key, ts, event_id, model_id, cast(input_tokens as text) as input_tokens,
          cast(output_tokens as text) as output_tokens, cast(basic_micros as text) as basic_micros, cast(pay_go_micros as text) as pay_go_micros
        from usage_event where ${from} and ${this.ofEnterprise(enterpriseId)}
        order by day, member_key, ts, event_id limit ${pageSize}`.execute(this.db);
      if (rows.length === 0) return;
      yield rows.map((row) => ({
        day: Number(row.day), memberKey: Number(row.member_key), modelId: Number(row.model_id), ts: Number(row.ts), inputTokens: decimalValue(row.input_tokens),
        outputTokens: decimalValue(row.output_tokens), basicMicros: decimalValue(row.basic_micros), payGoMicros: decimalValue(row.pay_go_micros),
      }));
      if (rows.length < pageSize) return;
      after = rows[rows.length - 1];
    }
  }
}

type RawGroupSums = MemberModelSums & PeriodFigures & { range: number };

type RawEventRow = Record<"day" | "member_key" | "ts" | "model_id", number | string>
  & Record<"event_id" | "input_tokens" | "output_tokens" | "basic_micros" | "pay_go_micros", string>;

export type StoredEvent = Omit<UsageEventRow, "eventId">;

/**
 * An enterprise's share of an ingestion's rollups: its events as they came while the ingestion may hold them pending (`events`, up
 * to PENDING_BELOW, on at most PENDING_DAYS days), else summed in `delta`, to be added to the stored rollups.
 */
class HeldRollups {
  events: StoredEvent[] | undefined;
  /** The UTC days of the events held. */
  private readonly days = new Set<number>();
  /** Summed for its days alone (a batch spread over more than PENDING_DAYS): the enterprise's pending events are left as they are. */
  wide = false;
  readonly delta: RollupDelta;

  constructor(layout: RollupLayout, mayHoldPending: boolean) {
    this.delta = new RollupDelta(new RollupPeriods(layout));
    this.events = mayHoldPending ? [] : undefined;
  }

  add(events: readonly StoredEvent[]): void {
    if (this.events && this.events.length + events.length < PENDING_BELOW) {
      for (const e of events) this.days.add(e.day);
      if (this.days.size <= PENDING_DAYS) {
        for (const e of events) this.events.push(e);
        return;
      }
      this.wide = true;
    }
    this.sum(events);
  }

  /** Sums the held events and `events` into the delta, which then takes every later event. */
  sum(events: readonly StoredEvent[] = []): void {
    for (const list of [this.events ?? [], events]) {
      for (const e of list) this.delta.add(e.memberKey, e.modelId, e.ts, e.inputTokens, e.outputTokens, e.basicMicros, e.payGoMicros);
    }
    this.events = undefined;
  }
}

/**
 * SQL for the position in `ranges` (consecutive) of the range holding an event's ts: its hour counted from the first range's when
 * they are hours (the ends may be cut), else a comparison with each end. Literals: SQLite makes a bound number a float.
 */
function rangeOf(ranges: ReadonlyArray<{ start: number; end: number }>): RawBuilder<number> {
  if (ranges.length === 1) return sql<number>`0`;
  const first = ranges[0]!.end - HOUR_SECONDS; // the first range's hour
  if (ranges.every((r, i) => r.start >= first + i * HOUR_SECONDS && r.end <= first + (i + 1) * HOUR_SECONDS)) {
    return sql<number>`(ts - ${sql.lit(first)}) / ${sql.lit(HOUR_SECONDS)}`;
  }
  return sql<number>`case ${sql.join(ranges.slice(0, -1).map((r, i) => sql`when ts < ${sql.lit(r.end)} then ${sql.lit(i)}`), sql` `)} else ${sql.lit(ranges.length - 1)} end`;
}

interface WindowRow {
  plus: Uint8Array | null;
  plus_rows: string | null;
  minus: Uint8Array | null;
  minus_rows: string | null;
  events: string | null;
  sign: number | string;
}

function addEventText(text: string, negate: boolean, memberOf: (memberKey: number) => number, sums: WindowSums): void {
  forEachEntry(text, 6, (values) => {
    const member = memberOf(values[0] as number);
    const model = sums.of(values[1] as number);
    for (let i = 0; i < 4; i++) model.addValue(member, i, negate ? -values[i + 2]! : values[i + 2]!);
    model.add(member, EVENTS, negate ? -1 : 1);
  });
}

function eventParameters(enterpriseId: string, rows: readonly UsageEventRow[]): unknown[] {
  const parameters: unknown[] = new Array(rows.length * EVENT_COLUMNS.length);
  let at = 0;
  for (const r of rows) {
    parameters[at++] = r.day;
    parameters[at++] = r.memberKey;
    parameters[at++] = r.ts;
    parameters[at++] = r.eventId;
    parameters[at++] = enterpriseId;
    parameters[at++] = r.modelId;
    parameters[at++] = r.inputTokens;
    parameters[at++] = r.outputTokens;
    parameters[at++] = r.basicMicros;
    parameters[at++] = r.payGoMicros;
  }
  return parameters;
}

/** A stable copy of `rows` in usage_event's key order by (day, member): usually one numeric sort of (day, member, position) keys. */
function inKeyOrder(rows: readonly UsageEventRow[]): UsageEventRow[] {
  let firstDay = Infinity;
  let lastDay = -Infinity;
  let maxMember = 0;
  for (const row of rows) {
    if (row.day < firstDay) firstDay = row.day;
    if (row.day > lastDay) lastDay = row.day;
    if (row.memberKey > maxMember) maxMember = row.memberKey;
  }
  if (rows.length > SORT_POSITIONS || lastDay - firstDay >= SORT_DAYS || maxMember >= SORT_MEMBERS) {
    return [...rows].sort((a, b) => a.day - b.day || a.memberKey - b.memberKey); // stable: positions kept
  }
  const keys = new Float64Array(rows.length);
  for (let i = 0; i < rows.length; i++) keys[i] = ((rows[i]!.day - firstDay) * SORT_MEMBERS + rows[i]!.memberKey) * SORT_POSITIONS + i;
  keys.sort();
  const ordered: UsageEventRow[] = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) ordered[i] = rows[keys[i]! % SORT_POSITIONS]!;
  return ordered;
}

/** inKeyOrder's numeric keys: 2^8 days * 2^32 members * 2^13 positions = 2^53. */
const SORT_DAYS = 2 ** 8;
const SORT_MEMBERS = 2 ** 32;
const SORT_POSITIONS = 2 ** 13;

const INGESTION_LOCK = 72001;

/** How long an import leaves SQLite's write lock free after each chunk: longer than a waiting writer's poll (1 ms). */
const CHUNK_PAUSE_MS = 5;

const FLUSH_DAY_SUMS = 50_000;
const FLUSH_ROLLUP_EVENTS = 200_000;

/**
 * An ingestion of fewer events (an API batch: at most 1,000) holds its rollups pending, one row, rather than rewrite the rollup rows
 * its events touch (a batch spread over a day touches some 140, with their member bitmaps): a larger ingestion, or a report, adds them.
 */
const PENDING_BELOW = 2_000;

/** The ingestion that would pass it adds every pending event to the rollups, its own with them. */
const MAX_PENDING_EVENTS = 50_000;

/**
 * A small ingestion whose events fall on more UTC days (a live batch over the last 24 hours falls on one or two) adds them to the
 * rollups at once: its own call pays for the rows of its days, and only of its own (the enterprise's pending events stay for a report).
 * With at most MAX_PENDING_ROWS pending ingestions, the pending events fall on at most 192 days, which a report adds in a fraction of a
 * second; held pending, 50,000 events each of another day made the report that added them hold the thread for seconds, every caller's
 * call waiting.
 */
const PENDING_DAYS = 3;
const MAX_PENDING_ROWS = 64;

/** Whether the enterprise's pending rows may take one more, of `events` events. */
const roomToHold = (pending: { events: number; rows: number }, events: number) =>
  pending.events + events <= MAX_PENDING_EVENTS && pending.rows < MAX_PENDING_ROWS;
