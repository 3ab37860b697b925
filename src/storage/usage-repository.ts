// Usage storage: members and models resolved to compact keys, raw events inserted idempotently, the
// rollup of 112-, 28- and 7-day periods maintained from exactly the rows an ingestion added, and the
// windowed sums.
import { CompiledQuery, sql, type Kysely } from "kysely";
import { invalidParameter } from "../domain/errors.js";
import { DAY_SECONDS, ROLLUP_TIERS, periodOf, type WindowPlan } from "../domain/usage-window.js";
import type { Schema } from "./schema.js";
import type { Dialect } from "./database.js";

export interface MemberRow {
  member_key: number;
  user_id: string;
  email: string;
  email_folded: string;
  account_type: number;
}

export interface ModelIdentity {
  model_name: string;
  model_type: string;
  model_source: string;
}

export interface UsageEventRow {
  eventId: string;
  memberKey: number;
  modelId: number;
  ts: number;
  inputTokens: bigint;
  outputTokens: bigint;
  basicMicros: bigint;
  payGoMicros: bigint;
}

export interface UsageSumRow {
  member_key: number;
  model_id: number;
  input_tokens: bigint;
  output_tokens: bigint;
  basic_micros: bigint;
  pay_go_micros: bigint;
}

const EVENT_COLUMNS = ["enterprise_id", "event_id", "member_key", "model_id", "ts", "input_tokens", "output_tokens", "basic_micros", "pay_go_micros"] as const;
/** Rows per INSERT statement at most: 9 parameters each, well under SQLite's 32,766. */
const INSERT_CHUNK = 512;

/** Statement sizes: 512-row chunks, then powers of two, so few distinct statements are ever prepared. */
function chunks<T>(rows: readonly T[]): T[][] {
  const out: T[][] = [];
  let i = 0;
  while (i < rows.length) {
    let size = INSERT_CHUNK;
    while (size > rows.length - i) size >>= 1;
    out.push(rows.slice(i, i + size));
    i += size;
  }
  return out;
}

export const modelKey = (m: ModelIdentity) => `${m.model_name}\u0000${m.model_type}\u0000${m.model_source}`;

interface SharedCaches {
  /** Model ids never change once committed, so they are cached for the life of the process. */
  modelIds: Map<string, number>;
  models: Map<number, ModelIdentity>;
  /** The multi-row INSERT for a given row count, compiled once and run with new parameters. */
  insertStatements: Map<number, CompiledQuery>;
}

export class UsageRepository {
  private readonly modelIds: Map<string, number>;
  private readonly models: Map<number, ModelIdentity>;
  private readonly insertStatements: Map<number, CompiledQuery>;

  constructor(
    private readonly db: Kysely<Schema>,
    private readonly dialect: Dialect,
    private readonly caches: SharedCaches = { modelIds: new Map(), models: new Map(), insertStatements: new Map() },
  ) {
    this.modelIds = caches.modelIds;
    this.models = caches.models;
    this.insertStatements = caches.insertStatements;
  }

  async membersByUserIds(enterpriseId: string, userIds: readonly string[]): Promise<MemberRow[]> {
    if (userIds.length === 0) return [];
    return this.db.selectFrom("member").select(["member_key", "user_id", "email", "email_folded", "account_type"])
      .where("enterprise_id", "=", enterpriseId).where("user_id", "in", userIds).execute();
  }

  async membersByFoldedEmails(enterpriseId: string, emailsFolded: readonly string[]): Promise<MemberRow[]> {
    if (emailsFolded.length === 0) return [];
    return this.db.selectFrom("member").select(["member_key", "user_id", "email", "email_folded", "account_type"])
      .where("enterprise_id", "=", enterpriseId).where("email_folded", "in", emailsFolded).execute();
  }

  async currency(enterpriseId: string): Promise<string | undefined> {
    const row = await this.db.selectFrom("enterprise").select("currency").where("enterprise_id", "=", enterpriseId).executeTakeFirst();
    return row?.currency;
  }

  /** The ids of these models, making the ones not seen before. */
  async resolveModels(models: Iterable<ModelIdentity>): Promise<Map<string, number>> {
    const wanted = new Map<string, ModelIdentity>();
    for (const m of models) wanted.set(modelKey(m), m);
    const missing = [...wanted.entries()].filter(([key]) => !this.modelIds.has(key)).map(([, m]) => m);
    if (missing.length > 0) {
      await this.db.insertInto("usage_model").values(missing).onConflict((oc) => oc.doNothing()).execute();
      await this.loadModels();
    }
    return new Map([...wanted.keys()].map((key) => [key, this.modelIds.get(key)!]));
  }

  /** The identities of these model ids (one reload at most when an id is new to this process). */
  async modelsById(modelIds: Iterable<number>): Promise<ReadonlyMap<number, ModelIdentity>> {
    for (const id of modelIds) {
      if (!this.models.has(id)) {
        await this.loadModels();
        break;
      }
    }
    return this.models;
  }

  private async loadModels(): Promise<void> {
    for (const row of await this.db.selectFrom("usage_model").selectAll().execute()) {
      const identity = { model_name: row.model_name, model_type: row.model_type, model_source: row.model_source };
      this.modelIds.set(modelKey(identity), Number(row.model_id));
      this.models.set(Number(row.model_id), identity);
    }
  }

  /**
   * Runs `work` as one ingestion, in one transaction. `work` gets this repository bound to the
   * transaction (SQLite has one connection: a read outside it would wait forever) and adds raw rows
   * with `insertEvents`; a repeated event_id is skipped. The rows actually inserted come back from the
   * INSERT and are summed per member, rollup period and model in memory, then added to the rollup
   * (sorted, by multi-row upserts), so duplicates never count twice. Returns how many rows were added.
   * `bulk`: a large load (an NDJSON import); into an empty store the member index is built once at
   * the end instead of row by row.
   */
  async ingest(work: (tx: UsageRepository) => Promise<void>, options: { bulk?: boolean } = {}): Promise<number> {
    try {
      return await this.db.transaction().execute(async (trx) => {
        if (this.dialect === "postgres") await sql`select pg_advisory_xact_lock(72001)`.execute(trx);
        const rebuildIndex = options.bulk === true && (await isEmpty(trx));
        if (rebuildIndex) await sql`drop index usage_event_by_member`.execute(trx);
        const tx = new UsageRepository(trx, this.dialect, this.caches);
        tx.rollup = new RollupSums(options.bulk ? BULK_FLUSH_KEYS : FLUSH_KEYS);
        await work(tx);
        await tx.flushRollup();
        if (rebuildIndex) await createMemberIndex(trx, this.dialect);
        return tx.added;
      });
    } catch (error) {
      // Models made inside a rolled-back transaction no longer exist: forget every cached id.
      this.modelIds.clear();
      this.models.clear();
      if (isSumOverflow(error)) {
        throw invalidParameter("events: a member's sum for a period would pass the store's 64-bit limit (9223372036854775807); nothing was recorded");
      }
      throw error;
    }
  }

  private rollup: RollupSums | undefined;
  private added = 0;

  /** Adds raw rows; only inside `ingest`. A repeated (enterprise_id, event_id) is skipped. */
  async insertEvents(enterpriseId: string, rows: readonly UsageEventRow[]): Promise<void> {
    const rollup = this.rollup;
    if (!rollup) throw new Error("insertEvents runs only inside ingest()");
    for (const chunk of chunks(rows)) {
      const parameters: unknown[] = [];
      for (const r of chunk) {
        parameters.push(enterpriseId, r.eventId, r.memberKey, r.modelId, r.ts, r.inputTokens, r.outputTokens, r.basicMicros, r.payGoMicros);
      }
      const inserted = await this.db.executeQuery<InsertedRow>(CompiledQuery.raw(this.insertStatement(chunk.length).sql, parameters));
      for (const row of inserted.rows) rollup.add(row);
      this.added += inserted.rows.length;
    }
    if (rollup.full) await this.flushRollup();
  }

  /** Adds the summed rows to the rollup, in key order (neighbouring rows share B-tree pages). */
  private async flushRollup(): Promise<void> {
    for (const chunk of chunks(this.rollup!.drain())) {
      await this.db.executeQuery(CompiledQuery.raw(this.upsertRollupStatement(chunk.length).sql, chunk.flat()));
    }
  }

  private upsertRollupStatement(rowCount: number): CompiledQuery {
    const key = -rowCount; // negative keys: the rollup upserts, beside the event inserts
    let compiled = this.insertStatements.get(key);
    if (!compiled) {
      const placeholder = { member_key: 0, tier_days: 0, period: 0, model_id: 0, input_tokens: 0n, output_tokens: 0n, basic_micros: 0n, pay_go_micros: 0n };
      compiled = this.db.insertInto("usage_rollup").values(Array.from({ length: rowCount }, () => placeholder))
        .onConflict((oc) => oc.columns(["member_key", "tier_days", "period", "model_id"]).doUpdateSet({
          input_tokens: sql`usage_rollup.input_tokens + excluded.input_tokens`,
          output_tokens: sql`usage_rollup.output_tokens + excluded.output_tokens`,
          basic_micros: sql`usage_rollup.basic_micros + excluded.basic_micros`,
          pay_go_micros: sql`usage_rollup.pay_go_micros + excluded.pay_go_micros`,
        })).compile();
      this.insertStatements.set(key, compiled);
    }
    return compiled;
  }

  private insertStatement(rowCount: number): CompiledQuery {
    let compiled = this.insertStatements.get(rowCount);
    if (!compiled) {
      const placeholder = Object.fromEntries(EVENT_COLUMNS.map((c) => [c, 0])) as never;
      compiled = this.db.insertInto("usage_event").values(Array.from({ length: rowCount }, () => placeholder))
        .onConflict((oc) => oc.columns(["enterprise_id", "event_id"]).doNothing())
        .returning(["member_key", "ts", "model_id", "input_tokens", "output_tokens", "basic_micros", "pay_go_micros"])
        .compile();
      this.insertStatements.set(rowCount, compiled);
    }
    return compiled;
  }

  /**
   * Sums per member and model over a window plan: rollup periods plus raw ranges of seconds. Sums
   * come back as text and become bigint: never a float, exact past 2^53.
   */
  async sumUsage(memberKeys: readonly number[], plan: WindowPlan): Promise<UsageSumRow[]> {
    if (memberKeys.length === 0) return [];
    const keys = sql.join(memberKeys.map((k) => sql`${k}`));
    const parts = [];
    for (const r of plan.rollups) {
      parts.push(sql`select member_key, model_id, input_tokens, output_tokens, basic_micros, pay_go_micros
        from usage_rollup where member_key in (${keys}) and tier_days = ${r.tierDays} and period >= ${r.fromPeriod} and period < ${r.toPeriod}`);
    }
    for (const [from, to] of plan.rawRanges) {
      parts.push(sql`select member_key, model_id, input_tokens, output_tokens, basic_micros, pay_go_micros
        from usage_event where member_key in (${keys}) and ts >= ${from} and ts < ${to}`);
    }
    const windowRows = sql.join(parts, sql` union all `);
    let result;
    try {
      result = await sql<SumText>`
        select member_key, model_id,
          cast(sum(input_tokens) as text) as i, cast(sum(output_tokens) as text) as o,
          cast(sum(basic_micros) as text) as b, cast(sum(pay_go_micros) as text) as p
        from (${windowRows}) as window_rows
        group by member_key, model_id`.execute(this.db);
    } catch (error) {
      if (!/integer overflow/i.test((error as Error)?.message ?? "")) throw error;
      // SQLite's sum() stops at 2^63; sum the high and low 32 bits apart and join them exactly.
      const split = await sql<Record<string, string | number>>`
        select member_key, model_id,
          sum(input_tokens >> 32) as ih, sum(input_tokens & 4294967295) as il,
          sum(output_tokens >> 32) as oh, sum(output_tokens & 4294967295) as ol,
          sum(basic_micros >> 32) as bh, sum(basic_micros & 4294967295) as bl,
          sum(pay_go_micros >> 32) as ph, sum(pay_go_micros & 4294967295) as pl
        from (${windowRows}) as window_rows
        group by member_key, model_id`.execute(this.db);
      const join = (high: string | number, low: string | number) => String((BigInt(high) << 32n) + BigInt(low));
      result = { rows: split.rows.map((r) => ({
        member_key: r.member_key!, model_id: r.model_id!,
        i: join(r.ih!, r.il!), o: join(r.oh!, r.ol!), b: join(r.bh!, r.bl!), p: join(r.ph!, r.pl!),
      })) };
    }
    return result.rows.map((r) => ({
      member_key: Number(r.member_key), model_id: Number(r.model_id),
      input_tokens: BigInt(r.i), output_tokens: BigInt(r.o), basic_micros: BigInt(r.b), pay_go_micros: BigInt(r.p),
    }));
  }
}

interface SumText {
  member_key: number | string;
  model_id: number | string;
  i: string;
  o: string;
  b: string;
  p: string;
}

/** A row as the INSERT returns it: per-event values, all far below 2^53 (see usage-event.ts). */
interface InsertedRow {
  member_key: number;
  ts: number;
  model_id: number;
  input_tokens: number | string;
  output_tokens: number | string;
  basic_micros: number | string;
  pay_go_micros: number | string;
}

/** Flush the in-memory sums when this many (member, tier, period, model) keys have gathered. */
const FLUSH_KEYS = 50_000;
/** A bulk load keeps more in memory (about 150 bytes a key): fewer, larger, sorted flushes. */
const BULK_FLUSH_KEYS = 1_500_000;

type RollupRow = [number, number, number, number, bigint, bigint, bigint, bigint];

/**
 * One (member, tier, period, model) sum. Sums stay JS numbers while they are exact (the hot path:
 * no BigInt per event); a part that would pass 2^53 moves into a bigint carry first.
 */
class Sum {
  readonly values = [0, 0, 0, 0];
  carry: bigint[] | undefined;
  constructor(readonly memberKey: number, readonly tier: number, readonly period: number, readonly modelId: number) {}

  add(i: number, value: number): void {
    const next = this.values[i]! + value;
    if (next <= Number.MAX_SAFE_INTEGER) {
      this.values[i] = next;
      return;
    }
    this.carry ??= [0n, 0n, 0n, 0n];
    this.carry[i]! += BigInt(this.values[i]!) + BigInt(value);
    this.values[i] = 0;
  }

  total(i: number): bigint {
    return BigInt(this.values[i]!) + (this.carry?.[i] ?? 0n);
  }
}

/** Sums per (member, tier, period, model) of the rows one ingestion inserted, not yet in the rollup. */
class RollupSums {
  /** member_key -> (tier index, period, model_id packed in one number) -> sum. */
  private readonly byMember = new Map<number, Map<number, Sum>>();
  private count = 0;

  constructor(private readonly limit: number) {}

  get full(): boolean {
    return this.count >= this.limit;
  }

  add(row: InsertedRow): void {
    const memberKey = Number(row.member_key);
    const modelId = Number(row.model_id);
    const day = Math.floor(Number(row.ts) / DAY_SECONDS);
    const values = [Number(row.input_tokens), Number(row.output_tokens), Number(row.basic_micros), Number(row.pay_go_micros)];
    let sums = this.byMember.get(memberKey);
    if (!sums) this.byMember.set(memberKey, (sums = new Map()));
    for (let t = 0; t < ROLLUP_TIERS.length; t++) {
      const period = periodOf(ROLLUP_TIERS[t]!, day);
      // Periods stay below 2^20 until the year 22000; model ids below 2^20: 42 bits in all.
      const key = (t * 2 ** 20 + period) * 2 ** 20 + modelId;
      let sum = sums.get(key);
      if (!sum) {
        sums.set(key, (sum = new Sum(memberKey, ROLLUP_TIERS[t]!, period, modelId)));
        this.count++;
      }
      for (let i = 0; i < 4; i++) sum.add(i, values[i]!);
    }
  }

  /** The rows in the rollup's key order, and an empty accumulator. */
  drain(): RollupRow[] {
    const rows: RollupRow[] = [];
    for (const memberKey of [...this.byMember.keys()].sort((a, b) => a - b)) {
      const sums = [...this.byMember.get(memberKey)!.values()]
        .sort((a, b) => a.tier - b.tier || a.period - b.period || a.modelId - b.modelId);
      for (const sum of sums) rows.push([sum.memberKey, sum.tier, sum.period, sum.modelId, sum.total(0), sum.total(1), sum.total(2), sum.total(3)]);
    }
    this.byMember.clear();
    this.count = 0;
    return rows;
  }
}

async function isEmpty(trx: Kysely<Schema>): Promise<boolean> {
  return (await trx.selectFrom("usage_event").select("event_id").limit(1).executeTakeFirst()) === undefined;
}

/** The member-first covering index, as the migration makes it (rebuilt after a bulk load). */
async function createMemberIndex(trx: Kysely<Schema>, dialect: Dialect): Promise<void> {
  if (dialect === "postgres") {
    await sql`create index usage_event_by_member on usage_event (member_key, ts)
      include (model_id, input_tokens, output_tokens, basic_micros, pay_go_micros)`.execute(trx);
  } else {
    await sql`create index usage_event_by_member on usage_event
      (member_key, ts, model_id, input_tokens, output_tokens, basic_micros, pay_go_micros)`.execute(trx);
  }
}

/** SQLite's CHECK on the rollup's integer columns, or PostgreSQL's bigint out of range (22003). */
function isSumOverflow(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  return (e?.code === "SQLITE_CONSTRAINT_CHECK" && /usage_rollup_integers/.test(e.message ?? "")) || e?.code === "22003";
}
