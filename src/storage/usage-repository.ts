// Usage storage: members and models resolved to compact keys, raw events inserted idempotently, the
// members' running totals (see usage-running-totals.ts) maintained from exactly the events an
// ingestion added, and the windowed sums.
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { CompiledQuery, sql, type Kysely, type RawBuilder } from "kysely";
import { invalidParameter } from "../domain/errors.js";
import { modelKey, type EventValue, type ModelIdentity, type RawEvent } from "../domain/usage-event.js";
import { decimalValue, EVENTS, ExactSums, exactSum, type MemberModelSums, SUM_LIMIT_MESSAGE, SumLimitError } from "../domain/usage-totals.js";
import type { PeriodFigures } from "../domain/report-cells.js";
import { WindowSums } from "../domain/usage-window-sums.js";
import { dayOf, type WindowPlan } from "../domain/usage-window.js";
import { HOUR_SECONDS } from "../domain/local-time.js";
import type { Schema } from "./schema.js";
import type { Database, Dialect } from "./database.js";
import { DaySums } from "./usage-day-sums.js";
import { among, chunks, StatementTexts, type BulkStore } from "./bulk-statements.js";
import { addToRunningTotals, LatestRows } from "./usage-running-totals.js";
import { addRowsToWindow } from "./usage-sums-codec.js";
import { currentLayout, UsageRollups } from "./usage-rollups.js";
import { RollupDelta, RollupPeriods, type RollupLayout } from "../domain/usage-rollup.js";

export interface MemberKeyRow {
  member_key: number;
  user_id: string;
}

export interface MemberRow extends MemberKeyRow {
  email: string;
  email_folded: string;
  account_type: number;
  /** Set for a former member (removed from the directory); null for a current one. */
  removed_at: number | null;
}

const MEMBER_COLUMNS = ["member_key", "user_id", "email", "email_folded", "account_type", "removed_at"] as const;

/** What the usage analytics read of an enterprise: its currency, default zone, directory version and usage layout. */
export interface EnterpriseSettings {
  currency: string;
  time_zone: string;
  directory_version: number;
  /** Its usage layout, when it is of this version (currentLayout): else its usage is read raw. */
  layout: RollupLayout | undefined;
}

/** One checked event, resolved to keys. */
export interface UsageEventRow {
  eventId: string;
  memberKey: number;
  modelId: number;
  ts: number;
  /** The UTC day of `ts` (dayOf). */
  day: number;
  inputTokens: EventValue;
  outputTokens: EventValue;
  basicMicros: EventValue;
  payGoMicros: EventValue;
}

/** The sums of memberModelSums, in SUMS order (INPUT to PAY_GO). */
const SUM_COLUMNS = ["input_tokens", "output_tokens", "basic_micros", "pay_go_micros"] as const;
const EVENT_COLUMNS = ["day", "member_key", "ts", "event_id", "enterprise_id", "model_id", "input_tokens", "output_tokens", "basic_micros", "pay_go_micros"] as const;


interface SharedCaches {
  /** Model ids never change once committed, so they are cached for the life of the process. */
  modelIds: Map<string, number>;
  models: Map<number, ModelIdentity>;
  /** The bulk statements' SQL texts (bulk-statements.ts). */
  texts: StatementTexts;
  /** The running-total rows this repository wrote last (usage-running-totals.ts). */
  latestRows: LatestRows;
}

export class UsageRepository {
  private readonly db: Kysely<Schema>;
  private readonly dialect: Dialect;
  /** This repository's connection or transaction, for the bulk readers and writers. */
  private readonly bulk: BulkStore;
  /** The rollups (usage-rollups.ts), on the same connection or transaction. */
  readonly rollups: UsageRollups;

  constructor(
    private readonly database: Pick<Database, "db" | "dialect" | "writeTransaction" | "observer">,
    private readonly caches: SharedCaches = { modelIds: new Map(), models: new Map(), texts: new StatementTexts(), latestRows: new LatestRows() },
  ) {
    this.db = database.db;
    this.dialect = database.dialect;
    this.bulk = { db: this.db, dialect: this.dialect, texts: caches.texts };
    this.rollups = new UsageRollups(this.db, this.dialect, caches.texts);
  }

  /** The members of an enterprise among these user_ids, former members included (a query's named members). */
  async membersByUserIds(enterpriseId: string, userIds: readonly string[]): Promise<MemberRow[]> {
    if (userIds.length === 0) return [];
    return this.db.selectFrom("member").select(MEMBER_COLUMNS)
      .where("enterprise_id", "=", enterpriseId).where(among(this.dialect, "user_id", userIds, "text")).execute();
  }

  /**
   * The keys of an enterprise's members among these user_ids, as membersByUserIds: what an ingestion
   * needs (without the e-mails, three strings fewer for each of a batch's ~900 members).
   */
  async memberKeysByUserIds(enterpriseId: string, userIds: readonly string[]): Promise<MemberKeyRow[]> {
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

  /** The members with these keys (the enterprise's only, former members included), in no particular order. */
  async membersByKeys(enterpriseId: string, memberKeys: readonly number[]): Promise<MemberRow[]> {
    if (memberKeys.length === 0) return [];
    const rows = await this.db.selectFrom("member").select(MEMBER_COLUMNS)
      .where("enterprise_id", "=", enterpriseId).where(among(this.dialect, "member_key", memberKeys, "bigint")).execute();
    return rows.map((row) => ({ ...row, member_key: Number(row.member_key) }));
  }

  /**
   * The enterprise's currency, time zone (the analytics' default zone), directory version and usage
   * layout, in one statement (a usage query's every statement counts); undefined when it does not exist.
   */
  async enterpriseSettings(enterpriseId: string): Promise<EnterpriseSettings | undefined> {
    const row = await this.db.selectFrom("enterprise as e").leftJoin("usage_layout as l", "l.enterprise_id", "e.enterprise_id")
      .select(["e.currency", "e.time_zone", "e.directory_version", "l.version", "l.time_zone as layout_zone", "l.hour_phase"])
      .where("e.enterprise_id", "=", enterpriseId).executeTakeFirst();
    return row && {
      currency: row.currency, time_zone: row.time_zone, directory_version: row.directory_version,
      layout: currentLayout({ version: row.version, time_zone: row.layout_zone, hour_phase: row.hour_phase }),
    };
  }

  /** The settings of a caller's enterprise: its token names it, so a missing row is a broken store, not bad input. */
  async callerEnterpriseSettings(enterpriseId: string): Promise<EnterpriseSettings> {
    const settings = await this.enterpriseSettings(enterpriseId);
    if (!settings) throw new Error(`enterprise ${enterpriseId} of a valid token does not exist`);
    return settings;
  }

  /**
   * The ids of these models (by `modelKey`), making the ones not seen before; `identity(i)` gives the
   * model of `keys[i]`, asked only for a model new to this process.
   */
  async resolveModels(keys: readonly string[], identity: (index: number) => ModelIdentity): Promise<ReadonlyMap<string, number>> {
    const missing = new Map<string, ModelIdentity>();
    for (let i = 0; i < keys.length; i++) {
      if (!this.caches.modelIds.has(keys[i]!) && !missing.has(keys[i]!)) missing.set(keys[i]!, identity(i));
    }
    if (missing.size > 0) {
      await this.db.insertInto("usage_model").values([...missing.values()]).onConflict((oc) => oc.doNothing()).execute();
      await this.loadModels();
    }
    return this.caches.modelIds;
  }

  /** The identities of these model ids (one reload at most when an id is new to this process). */
  async modelsById(modelIds: Iterable<number>): Promise<ReadonlyMap<number, ModelIdentity>> {
    for (const id of modelIds) {
      if (!this.caches.models.has(id)) {
        await this.loadModels();
        break;
      }
    }
    return this.caches.models;
  }

  private async loadModels(): Promise<void> {
    for (const row of await this.db.selectFrom("usage_model").selectAll().execute()) {
      const identity = { model_name: row.model_name, model_type: row.model_type, model_source: row.model_source };
      this.caches.modelIds.set(modelKey(row.model_name, row.model_type, row.model_source), Number(row.model_id));
      this.caches.models.set(Number(row.model_id), identity);
    }
  }

  /**
   * Runs `work` as one ingestion, in one transaction. `work` gets this repository bound to the
   * transaction (SQLite has one connection: a read outside it would wait forever) and adds raw rows
   * with `insertEvents`; a repeated event_id is skipped. The events actually inserted are summed per
   * (member, day) in memory and added to the stored running totals at the end (or when many are
   * held), so duplicates never count twice. Returns how many events were added. Waits for the write
   * lock at most the busy timeout (then a busy StoreFault, nothing done).
   */
  async ingest(work: (tx: UsageRepository) => Promise<void>): Promise<number> {
    return this.ingestOnce(work, undefined);
  }

  /**
   * One chunk of an import (operations/import-usage.ts): an ingestion as `ingest`, whose rows come
   * summed (`insertEvents` with `summed`, then `addSumFrames`). Waits for the write lock as long as
   * it takes. After the commit the lock is left free a moment: SQLite hands it to whoever asks first,
   * and the next chunk would always be first.
   */
  async ingestImportChunk(work: (tx: UsageRepository) => Promise<void>): Promise<number> {
    const added = await this.ingestOnce(work, true);
    if (this.dialect === "sqlite") await sleep(CHUNK_PAUSE_MS);
    return added;
  }

  /**
   * Recomputes the enterprise's running totals and rollups from its raw events (`usage rebuild`): its
   * rows are deleted and made again from every event (the rollups in its current zone), in one ingestion, so that a live ingestion or import
   * waits for it (on PostgreSQL for the ingestion lock, SQLite's write lock) and then adds to the
   * rebuilt rows. Waits for the lock as long as it takes. `progress` hears the events read so far.
   * Returns how many events it read.
   */
  async rebuild(enterpriseId: string, progress?: (events: number) => void): Promise<number> {
    let events = 0;
    await this.ingestOnce(async (tx) => {
      tx.caches.latestRows.clear();
      const rollup = new RollupDelta(new RollupPeriods(await tx.rollups.restart(enterpriseId)));
      tx.rollupDeltas.set(enterpriseId, rollup);
      const daySums = tx.daySums!;
      for await (const page of tx.allEvents(enterpriseId)) {
        holdSums(page, rollup, daySums);
        await tx.flushHeldSums(daySums);
        events += page.length;
        progress?.(events);
      }
    }, true);
    return events;
  }

  /**
   * After an import, on PostgreSQL: vacuums and analyzes the tables it wrote. An import rewrites a
   * member's running-total row and a day's rollup rows once a chunk, leaving dead row versions that
   * autovacuum clears only later; until then every query that reads those rows reads past them too.
   * The events' new pages are not yet all-visible either: an index-only scan of them (the query's
   * raw part of a day, a report's or an export's raw sums) visits the heap for every event until a
   * vacuum marks them. SQLite reuses the pages in place: nothing to do.
   */
  async tidyAfterImport(): Promise<void> {
    if (this.dialect === "postgres") await sql`vacuum (analyze) usage_event, usage_running_total, usage_rollup, usage_rollup_members`.execute(this.db);
  }

  /** How many raw events the enterprise has (what `usage rebuild` will read). */
  async eventCount(enterpriseId: string): Promise<number> {
    const row = await this.db.selectFrom("usage_event").select((eb) => eb.fn.countAll<number | string>().as("n"))
      .where("enterprise_id", "=", enterpriseId).executeTakeFirstOrThrow();
    return Number(row.n);
  }

  private async ingestOnce(work: (tx: UsageRepository) => Promise<void>, unbounded = false): Promise<number> {
    try {
      return await this.database.writeTransaction(async (trx) => {
        // PostgreSQL: one ingestion at a time, so that two never read and rewrite the same row at once.
        if (this.dialect === "postgres") await this.takeIngestionLock(trx);
        const { ingestions } = await trx.updateTable("usage_ingestion_count").set((eb) => ({ ingestions: eb("ingestions", "+", 1) }))
          .where("id", "=", 1).returning("ingestions").executeTakeFirstOrThrow();
        this.caches.latestRows.begin(Number(ingestions));
        const tx = new UsageRepository({ ...this.database, db: trx }, this.caches);
        tx.daySums = new DaySums();
        await work(tx);
        await tx.writeDaySums();
        await tx.writeRollups();
        return tx.added;
      }, { unbounded });
    } catch (error) {
      // Models and running-total rows made inside a rolled-back transaction no longer exist: forget them.
      this.caches.modelIds.clear();
      this.caches.models.clear();
      this.caches.latestRows.clear();
      if (error instanceof SumLimitError) {
        throw invalidParameter(SUM_LIMIT_MESSAGE);
      }
      throw error;
    }
  }

  /**
   * PostgreSQL's ingestion lock, for this transaction: taken at once when free, else waited for (at
   * most the lock_timeout that writeTransaction set), and that wait reported to the store's observer.
   */
  private async takeIngestionLock(trx: Kysely<Schema>): Promise<void> {
    const { rows } = await sql<{ taken: boolean }>`select pg_try_advisory_xact_lock(${sql.lit(INGESTION_LOCK)}) as taken`.execute(trx);
    if (rows[0]!.taken) return;
    const started = performance.now();
    let acquired = false;
    try {
      await sql`select pg_advisory_xact_lock(${sql.lit(INGESTION_LOCK)})`.execute(trx);
      acquired = true;
    } finally {
      this.database.observer.lockWaited((performance.now() - started) / 1000, acquired);
    }
  }

  /** The store's count of committed ingestions (API batches and import chunks, by every process). */
  async ingestionCount(): Promise<number> {
    const row = await this.db.selectFrom("usage_ingestion_count").select("ingestions").where("id", "=", 1).executeTakeFirst();
    return Number(row?.ingestions ?? 0);
  }

  /** The day sums of this ingestion's events (by member key and model id), unless the caller sums them itself (an import). */
  private daySums: DaySums | undefined;
  /** An import chunk's events that its worker summed but the store already held (repeats): taken away from its sums. */
  private repeats: DaySums | undefined;
  /** Per enterprise, the rollup delta of this ingestion (undefined: no current layout, no pre-aggregates kept, see UsageRollups.layoutForIngestion). */
  private readonly rollupDeltas = new Map<string, RollupDelta | undefined>();
  private added = 0;

  /**
   * Adds raw rows; only inside `ingest`. A repeated (enterprise_id, event_id) is skipped. With
   * `summed`, the caller sums the rows itself and hands the sums to `addSumFrames` after them
   * (an NDJSON import sums on its parsing thread); a skipped row is then taken away from them.
   */
  async insertEvents(enterpriseId: string, rows: readonly UsageEventRow[], options: { summed?: boolean } = {}): Promise<void> {
    const daySums = this.daySums;
    if (!daySums) throw new Error("insertEvents runs only inside ingest()");
    const rollup = await this.rollupDeltaOf(enterpriseId); // before the rows: whether the enterprise had events decides it
    const fresh = await this.insertNew(enterpriseId, rows);
    this.added += fresh.length;
    if (!rollup) return; // no current layout: no pre-aggregates until `usage rebuild` makes them all
    if (options.summed) {
      holdSums(fresh, rollup, undefined);
      if (fresh.length === rows.length) return;
      const inserted = new Set(fresh);
      const repeats = (this.repeats ??= new DaySums());
      for (const row of rows) {
        if (!inserted.has(row)) repeats.add(row.memberKey, row.modelId, row.day, row.inputTokens, row.outputTokens, row.basicMicros, row.payGoMicros);
      }
      return;
    }
    holdSums(fresh, rollup, daySums);
    await this.flushHeldSums(daySums);
  }

  /** Adds the held sums to the running totals and rollups once many are held, so an ingestion's memory stays bounded. */
  private async flushHeldSums(daySums: DaySums): Promise<void> {
    if (daySums.size >= FLUSH_DAY_SUMS) await this.writeDaySums();
    let held = 0;
    for (const delta of this.rollupDeltas.values()) held += delta?.size ?? 0;
    if (held >= FLUSH_ROLLUP_EVENTS) await this.writeRollups();
  }

  private async rollupDeltaOf(enterpriseId: string): Promise<RollupDelta | undefined> {
    if (!this.rollupDeltas.has(enterpriseId)) {
      const layout = await this.rollups.layoutForIngestion(enterpriseId);
      this.rollupDeltas.set(enterpriseId, layout && new RollupDelta(new RollupPeriods(layout)));
    }
    return this.rollupDeltas.get(enterpriseId);
  }

  /** Adds the held day sums to the running totals. */
  private async writeDaySums(): Promise<void> {
    if (this.daySums!.size > 0) await addToRunningTotals(this.bulk, this.caches.latestRows, { frames: this.daySums!.takeFrames() });
  }

  /** Adds the held rollup deltas to the stored rollups. */
  private async writeRollups(): Promise<void> {
    for (const [enterpriseId, delta] of this.rollupDeltas) {
      if (delta && delta.size > 0) await this.rollups.add(enterpriseId, delta.take());
    }
  }

  /**
   * Adds the sums of the enterprise's rows inserted with `summed` (frames, see DaySums.takeFrames,
   * with member and model numbers mapped by `memberKeys` and `modelIds`) to the running totals, less
   * the repeats among those rows; nothing without a current layout. Only after those rows: their
   * repeats must be known.
   */
  async addSumFrames(enterpriseId: string, frames: Uint8Array, memberKeys: ArrayLike<number>, modelIds: ArrayLike<number>): Promise<void> {
    if (!(await this.rollupDeltaOf(enterpriseId))) return;
    await addToRunningTotals(this.bulk, this.caches.latestRows, { frames, memberKeys, modelIds }, this.repeats?.takeFrames());
  }

  /**
   * Inserts the rows whose (enterprise_id, event_id) is not stored yet, the first of a repeated one
   * winning whatever the order; returns them. In usage_event's key order (day, member), so that
   * consecutive inserts land on the same pages (on SQLite an import 12% faster than in file order),
   * by multi-row INSERTs (chunks). The usual batch repeats no event: every INSERT adds all its rows,
   * and that is all. One that adds fewer met a repeat, stored or within `rows`: the batch is undone
   * (a savepoint) and inserted again without the repeats. (Dropping repeats up front cost every batch
   * a Set of its event_ids: about 7% of an import's writing thread.)
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

  /** Inserts `rows`; false as soon as an INSERT adds fewer rows than it was given (it met a repeat). */
  private async insertAll(enterpriseId: string, rows: readonly UsageEventRow[]): Promise<boolean> {
    for (const chunk of chunks(rows)) {
      const result = await this.db.executeQuery(CompiledQuery.raw(this.insertStatement(chunk.length), eventParameters(enterpriseId, chunk)));
      if (Number(result.numAffectedRows ?? 0n) !== chunk.length) return false;
    }
    return true;
  }

  /** The rows whose event_id is neither stored nor earlier in `rows`. */
  private async withoutKnownEvents(enterpriseId: string, rows: readonly UsageEventRow[]): Promise<UsageEventRow[]> {
    const seen = new Set<string>();
    for (const part of chunks(rows)) {
      const stored = await this.db.selectFrom("usage_event").select("event_id")
        .where("enterprise_id", "=", enterpriseId).where("event_id", "in", part.map((r) => r.eventId)).execute();
      for (const { event_id } of stored) seen.add(event_id);
    }
    return rows.filter((row) => !seen.has(row.eventId) && (seen.add(row.eventId), true));
  }

  private insertStatement(rowCount: number): string {
    return this.bulk.texts.of("usage events: insert", rowCount, (rows) => {
      const placeholder = Object.fromEntries(EVENT_COLUMNS.map((c) => [c, 0])) as never;
      return this.db.insertInto("usage_event").values(Array.from({ length: rows }, () => placeholder))
        .onConflict((oc) => oc.columns(["enterprise_id", "event_id"]).doNothing())
        .compile().sql;
    });
  }

  /**
   * Sums per member (by position in `memberKeys`) and model over a window plan: each member's
   * running totals through the plan's later day minus those through its earlier one, plus or minus
   * the raw events of its partial days, read by one statement (one snapshot: an ingestion
   * committing meanwhile is either wholly in or wholly out) and added up here, exactly (bigint past
   * 2^53). The statement returns few values, whatever the number of members:
   * - the running totals read, concatenated into one blob per sign, beside a text of each row's
   *   member key and length. The driver makes a Buffer per blob value (5.4 ms for 1,900 blobs
   *   against 2.2 ms for one a member, as measured);
   * - the raw events of each range as one text of "member,model,input,output,basic,pay_go" entries:
   *   databases print 64-bit integers exactly, and one string costs far less than a row per event
   *   with every column checked for its size (measured for ~575 events: 0.9 ms as text, 2.1 ms as
   *   plain rows, 2.9 ms as rows with the size checks).
   */
  async sumUsage(memberKeys: readonly number[], plan: WindowPlan): Promise<WindowSums> {
    if (memberKeys.length === 0) return new WindowSums(0);
    const postgres = this.dialect === "postgres";
    const members = sql.join(memberKeys.map((k, i) => (postgres && i === 0 ? sql`(cast(${k} as bigint))` : sql`(${k})`)));
    const noBlob = postgres ? sql`cast(null as bytea)` : sql`null`;
    const noText = postgres ? sql`cast(null as text)` : sql`null`;
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
      parts.push(sql`select ${totalsOf("plus")} as plus, ${rowsOf("plus")} as plus_rows, ${totalsOf("minus")} as minus,
          ${rowsOf("minus")} as minus_rows, 0 as sign, ${noText} as events
        from (select m.k as k, ${through(plan.runningTotals.plusThrough)} as plus, ${through(plan.runningTotals.minusThrough)} as minus from m) as running`);
    }
    const entry = postgres
      ? sql`concat_ws(',', member_key, model_id, input_tokens, output_tokens, basic_micros, pay_go_micros)`
      : sql`member_key || ',' || model_id || ',' || input_tokens || ',' || output_tokens || ',' || basic_micros || ',' || pay_go_micros`;
    const eventsOf = postgres ? sql`string_agg(${entry}, ';')` : sql`group_concat(${entry}, ';')`;
    for (const { from, to, sign } of plan.raw) {
      parts.push(sql`select ${noBlob} as plus, ${noText} as plus_rows, ${noBlob} as minus, ${noText} as minus_rows, ${sql.lit(sign)} as sign, ${eventsOf} as events
        from usage_event where day = ${dayOf(from)} and member_key in (select k from m) and ts >= ${from} and ts < ${to}`);
    }
    const { rows } = await sql<WindowRow>`with m(k) as (values ${members}) ${sql.join(parts, sql` union all `)}`.execute(this.db);
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

  /**
   * Each (member, model)'s sums over [start, end) (of `memberKeys` only, when given), added by the
   * database (rawSums).
   */
  async memberModelSums(enterpriseId: string, start: number, end: number, memberKeys?: readonly number[]): Promise<MemberModelSums[]> {
    return (await this.rawSums(enterpriseId, [{ start, end }], memberKeys, "pair"))
      .map(({ key, modelId, sums, row }) => ({ memberKey: key, modelId, sums, row }));
  }

  /**
   * For each of some consecutive ranges (of `memberKeys` only, when given): each model's sums and
   * how many distinct members it had, added and counted by the database (rawSums), with the range's
   * position in `ranges`. A report's buckets by model that no rollup period covers get a row a
   * model, instead of a row a (member, model), and a day of hours is one statement.
   */
  async modelSums(enterpriseId: string, ranges: ReadonlyArray<{ start: number; end: number }>, memberKeys?: readonly number[])
    : Promise<Array<PeriodFigures & { range: number }>> {
    return (await this.rawSums(enterpriseId, ranges, memberKeys, "model"))
      .map(({ key, modelId, memberCount, sums, row }) => ({ range: key, modelId, memberCount, sums, row }));
  }

  /**
   * Raw events summed per (member, model), or per (range, model) with a count of distinct members,
   * in one statement (one snapshot), sent back as one text, "key,model_id,[members,]events,input,
   * output,basic,pay_go" per group (`key`: the member key, or the range's position and then the
   * distinct members), joined by ";" (far cheaper to carry than a row per group). `ranges` are consecutive.
   * Each sum is exact: PostgreSQL adds bigints as numeric. SQLite's sum stops at int64 with an
   * "integer overflow" error: a window whose sums reach that far is summed again with each value's
   * bits above and below the 20th added apart, both sent (input_high,input_low,…). Neither half
   * overflows: a window's sum is at most its member's running total (at most 2^64 - 1), so the high
   * halves add up to less than 2^44, and the low ones to less than 2^20 an event.
   */
  private async rawSums(enterpriseId: string, ranges: ReadonlyArray<{ start: number; end: number }>, memberKeys: readonly number[] | undefined,
    by: "pair" | "model"): Promise<RawGroupSums[]> {
    if (memberKeys?.length === 0) return [];
    try {
      return await this.rawSumsIn(enterpriseId, ranges, memberKeys, by, "whole");
    } catch (error) {
      if (!(error instanceof Error && error.message === "integer overflow")) throw error;
      return this.rawSumsIn(enterpriseId, ranges, memberKeys, by, "halves");
    }
  }

  private async rawSumsIn(enterpriseId: string, ranges: ReadonlyArray<{ start: number; end: number }>, memberKeys: readonly number[] | undefined,
    by: "pair" | "model", form: "whole" | "halves"): Promise<RawGroupSums[]> {
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
    // SQLite, without statistics, would take the equality on enterprise_id to the identity index
    // (enterprise_id, event_id) and read the enterprise's every event; the unary plus keeps it off
    // that index, so the window is a range of the primary key (day, member_key, ts, event_id).
    const ofEnterprise = postgres ? sql`enterprise_id = ${enterpriseId}` : sql`+enterprise_id = ${enterpriseId}`;
    const onlyMembers = memberKeys === undefined ? sql`true` : among(this.dialect, "member_key", memberKeys, "bigint");
    const { rows: [row] } = await sql<{ groups: string | null }>`select ${postgres ? sql`string_agg(${group}, ';')` : sql`group_concat(${group}, ';')`} as groups
      from (select ${keys}, model_id, count(*) as events, ${sql.join(columns.map((c) => sql`${c.sum} as ${sql.ref(c.name)}`))}
        from usage_event where day >= ${dayOf(start)} and day <= ${dayOf(end - 1)} and ts >= ${start} and ts < ${end}
        and ${ofEnterprise} and ${onlyMembers}
        group by ${groupBy}) as group_sums`.execute(this.db);
    const groups: RawGroupSums[] = [];
    if (!row?.groups) return groups;
    const sums = new ExactSums(entryCount(row.groups)); // sized once: growing it a doubling at a time cost an export 1%
    forEachEntry(row.groups, names.length, (values) => {
      const row = sums.newRow();
      for (let i = 0; i < SUM_COLUMNS.length; i++) {
        sums.addValue(row, i, form === "whole" ? values[events + 1 + i]! : fromHalves(values[events + 1 + 2 * i]!, values[events + 2 + 2 * i]!));
      }
      sums.add(row, EVENTS, values[events] as number);
      groups.push({ key: values[0] as number, modelId: values[1] as number, memberCount: by === "model" ? values[2] as number : 1, sums, row });
    });
    return groups;
  }

  /**
   * Every raw event of the enterprise (what `rebuild` reads), in pages of at most `pageSize`, in the
   * table's key order (UTC day, member, time). Each page is its own statement (keyset paging), so the
   * scan never holds one read open. Every value is a number (each at most 10^12).
   */
  private async *allEvents(enterpriseId: string, pageSize = 20_000): AsyncGenerator<RawEvent[]> {
    // As in memberModelSums, SQLite keeps off the identity index: a page is a range of the primary key.
    const ofEnterprise = this.dialect === "postgres" ? sql`enterprise_id = ${enterpriseId}` : sql`+enterprise_id = ${enterpriseId}`;
    let after: { day: number; member_key: number; ts: number; event_id: string } | undefined;
    for (;;) {
      const from = after === undefined ? sql`true`
        : sql`(day, member_key, ts, event_id) > (${after.day}, ${after.member_key}, ${after.ts}, ${after.event_id})`;
      // The values as text: exact at any size (a driver's number is not past 2^53).
      const { rows } = await sql<RawEventRow>`select day, member_key, ts, event_id, model_id, cast(input_tokens as text) as input_tokens,
          cast(output_tokens as text) as output_tokens, cast(basic_micros as text) as basic_micros, cast(pay_go_micros as text) as pay_go_micros
        from usage_event where ${from} and ${ofEnterprise}
        order by day, member_key, ts, event_id limit ${pageSize}`.execute(this.db);
      if (rows.length === 0) return;
      yield rows.map((row) => ({
        memberKey: Number(row.member_key), modelId: Number(row.model_id), ts: Number(row.ts), inputTokens: decimalValue(row.input_tokens),
        outputTokens: decimalValue(row.output_tokens), basicMicros: decimalValue(row.basic_micros), payGoMicros: decimalValue(row.pay_go_micros),
      }));
      if (rows.length < pageSize) return;
      const last = rows[rows.length - 1]!;
      after = { day: Number(last.day), member_key: Number(last.member_key), ts: Number(last.ts), event_id: last.event_id };
    }
  }
}

/** A group of rawSums: its key (a member key, or a range's position), its model, its distinct members and its sums (row `row` of `sums`, the statement's table). */
interface RawGroupSums {
  key: number;
  modelId: number;
  memberCount: number;
  sums: ExactSums;
  row: number;
}

interface RawEventRow {
  day: number | string;
  member_key: number | string;
  ts: number | string;
  event_id: string;
  model_id: number | string;
  input_tokens: string;
  output_tokens: string;
  basic_micros: string;
  pay_go_micros: string;
}

/**
 * Stored events into an ingestion's held sums: the rollup delta (when the enterprise keeps rollups)
 * and the running totals' day sums (unless the caller sums the events itself: an import).
 */
function holdSums(events: readonly RawEvent[], rollup: RollupDelta | undefined, daySums: DaySums | undefined): void {
  for (const e of events) {
    rollup?.add(e.memberKey, e.modelId, e.ts, e.inputTokens, e.outputTokens, e.basicMicros, e.payGoMicros);
    daySums?.add(e.memberKey, e.modelId, dayOf(e.ts), e.inputTokens, e.outputTokens, e.basicMicros, e.payGoMicros);
  }
}

/**
 * SQL for the position in `ranges` (consecutive) of the range holding an event's ts: the hour's
 * number counted from the first range's hour when they are whole hours (the first and last may be
 * cut short), else a comparison with each range's end. Literals, not parameters: SQLite makes a bound
 * JavaScript number a float, and the hour's number would come out fractional.
 */
function rangeOf(ranges: ReadonlyArray<{ start: number; end: number }>): RawBuilder<number> {
  if (ranges.length === 1) return sql<number>`0`;
  const first = ranges[0]!.end - HOUR_SECONDS; // the first range's hour
  if (ranges.every((r, i) => r.start >= first + i * HOUR_SECONDS && r.end <= first + (i + 1) * HOUR_SECONDS)) {
    return sql<number>`(ts - ${sql.lit(first)}) / ${sql.lit(HOUR_SECONDS)}`;
  }
  return sql<number>`case ${sql.join(ranges.slice(0, -1).map((r, i) => sql`when ts < ${sql.lit(r.end)} then ${sql.lit(i)}`), sql` `)} else ${sql.lit(ranges.length - 1)} end`;
}

/** A sum sent as its bits above and below the 20th (times 2^20 is exact in a double). */
function fromHalves(high: number | bigint, low: number | bigint): number | bigint {
  return typeof high === "bigint" ? high * 2n ** 20n + BigInt(low) : exactSum(high * 2 ** 20, low);
}

/** A row of the window statement: the running totals read (added and subtracted), or one range's raw events. */
interface WindowRow {
  /** Running totals added, end to end. */
  plus: Uint8Array | null;
  /** Each of plus's rows: "member_key,length", joined by commas. */
  plus_rows: string | null;
  /** Running totals subtracted (the days before the window), end to end. */
  minus: Uint8Array | null;
  /** Each of minus's rows, as plus_rows. */
  minus_rows: string | null;
  /** Raw events: "member_key,model_id,input,output,basic,pay_go" entries joined by ";". */
  events: string | null;
  /** Whether the events are added (1) or subtracted (-1). */
  sign: number | string;
}

/** Adds (or subtracts) the events of a window row's text ("member,model,input,output,basic,pay_go" entries). */
function addEventText(text: string, negate: boolean, memberOf: (memberKey: number) => number, sums: WindowSums): void {
  forEachEntry(text, 6, (values) => {
    const member = memberOf(values[0] as number);
    const model = sums.of(values[1] as number);
    for (let i = 0; i < 4; i++) model.addValue(member, i, negate ? -values[i + 2]! : values[i + 2]!);
    model.add(member, EVENTS, negate ? -1 : 1);
  });
}

/**
 * Calls `entry` with the values of each entry of a text the database made: entries joined by ";",
 * each `fields` unsigned integers joined by ",". Each value is exact: up to 15 digits a number (below
 * 2^53), longer a bigint. `values` is one array, refilled for each entry.
 */
function forEachEntry(text: string, fields: number, entry: (values: Array<number | bigint>) => void): void {
  const values = new Array<number | bigint>(fields).fill(0);
  let field = 0;
  let value = 0;
  let from = 0;
  for (let at = 0; at <= text.length; at++) {
    const code = at < text.length ? text.charCodeAt(at) : SEMICOLON; // as if a ";" followed the last entry
    if (code >= 48 && code <= 57) {
      value = value * 10 + (code - 48);
      continue;
    }
    if ((code !== COMMA && code !== SEMICOLON) || field === fields) throw new Error(`usage text: unexpected ${JSON.stringify(text[at])} at ${at}`);
    values[field++] = at - from <= 15 ? value : BigInt(text.slice(from, at));
    value = 0;
    from = at + 1;
    if (code === SEMICOLON) {
      if (field !== fields) throw new Error(`usage text: ${field} values in the entry ending at ${at}`);
      entry(values);
      field = 0;
    }
  }
}

/** How many entries a text of forEachEntry holds. */
function entryCount(text: string): number {
  let count = 1;
  for (let at = text.indexOf(";"); at !== -1; at = text.indexOf(";", at + 1)) count++;
  return count;
}

const COMMA = 44;
const SEMICOLON = 59;

function eventParameters(enterpriseId: string, rows: readonly UsageEventRow[]): unknown[] {
  const parameters: unknown[] = new Array(rows.length * EVENT_COLUMNS.length);
  for (let i = 0; i < rows.length; i++) setEventParameters(parameters, i * EVENT_COLUMNS.length, enterpriseId, rows[i]!);
  return parameters;
}

/**
 * A copy of `rows` in usage_event's key order by day and member, each member's events of a day in
 * the order given (their time order when they came in it; the order only places inserts near each
 * other). Usually by one numeric sort of (day, member, position) keys, exact below 2^53: a
 * comparator sort of row objects cost 5% of an import's writing thread.
 */
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

/** One event's values in EVENT_COLUMNS order, written into `parameters` from `at`. */
function setEventParameters(parameters: unknown[], at: number, enterpriseId: string, r: UsageEventRow): void {
  parameters[at] = r.day;
  parameters[at + 1] = r.memberKey;
  parameters[at + 2] = r.ts;
  parameters[at + 3] = r.eventId;
  parameters[at + 4] = enterpriseId;
  parameters[at + 5] = r.modelId;
  parameters[at + 6] = r.inputTokens;
  parameters[at + 7] = r.outputTokens;
  parameters[at + 8] = r.basicMicros;
  parameters[at + 9] = r.payGoMicros;
}

/** PostgreSQL's advisory lock that one ingestion at a time holds (takeIngestionLock). */
const INGESTION_LOCK = 72001;

/** How long an import leaves SQLite's write lock free after each chunk: longer than a waiting writer's poll (1 ms). */
const CHUNK_PAUSE_MS = 5;

/** Write the held day sums when this many (member, day) sums have gathered. */
const FLUSH_DAY_SUMS = 50_000;

/** Write the held rollup deltas when they hold this many events. */
const FLUSH_ROLLUP_EVENTS = 200_000;
