// The usage rollups' rows: layouts, deltas added, periods read. Writes run in an ingestion's transaction, which no other shares.
import roaring from "roaring";
import { CompiledQuery, sql, type Kysely } from "kysely";
import {
  addEncodedSums, ALL_MODELS, DAY, encodeSums, layoutFor, USAGE_LAYOUT_VERSION, type Grain, type RollupAdditions, type RollupDelta, type RollupLayout,
} from "../domain/usage-rollup.js";
import { decodeMemberSums, mergeMemberSums } from "./member-day-sums.js";
import { ExactSums, SUMS, type MemberModelSums } from "../domain/usage-totals.js";
import type { PeriodFigures } from "../domain/report-cells.js";
import type { Schema, UsageRollupMembersTable, UsageRollupTable } from "./schema.js";
import { among, chunks, insertText, type BulkStore } from "./bulk-statements.js";
import { forEachEntry } from "./usage-sums-codec.js";
import type { StoredEvent } from "./usage-repository.js";

const { RoaringBitmap32 } = roaring;

/** A stored period of one model (or ALL_MODELS): its sums a row of a table shared by the rows read together. */
type RollupRow = PeriodFigures & { period: number };

const KEY_COLUMNS = ["enterprise_id", "grain", "period", "model_id"] as const;
const SUMS_COLUMNS = [...KEY_COLUMNS, "member_count", "sums"] as const;
const MEMBERS_COLUMNS = [...KEY_COLUMNS, "members", "member_sums"] as const;

type StoredRollup = Pick<UsageRollupTable, "period" | "model_id" | "sums"> & Pick<UsageRollupMembersTable, "members" | "member_sums">;

export class UsageRollups {
  private readonly db: Kysely<Schema>;

  constructor(private readonly bulk: BulkStore) {
    this.db = bulk.db;
  }

  /**
   * Begun in the enterprise's zone when it has no usage yet, so its pre-aggregates hold every event. None when its events came before
   * its layout (an older store, or another version): `usage rebuild` makes them.
   */
  async layoutForIngestion(enterpriseId: string): Promise<RollupLayout | undefined> {
    const layout = currentLayout(await this.db.selectFrom("usage_layout").select(["version", "time_zone", "hour_phase"])
      .where("enterprise_id", "=", enterpriseId).executeTakeFirst());
    if (layout) return layout;
    const anyEvent = await this.db.selectFrom("usage_event").select("event_id").where("enterprise_id", "=", enterpriseId).limit(1).executeTakeFirst();
    return anyEvent ? undefined : this.restart(enterpriseId);
  }

  /** Deletes the enterprise's pre-aggregates and begins its layout again, empty, in its current zone. */
  async restart(enterpriseId: string): Promise<RollupLayout> {
    const members = this.db.selectFrom("member").select("member_key").where("enterprise_id", "=", enterpriseId);
    await this.db.deleteFrom("usage_running_total").where("member_key", "in", members).execute();
    for (const table of ["usage_rollup", "usage_rollup_members", "usage_rollup_pending", "usage_layout"] as const) {
      await this.db.deleteFrom(table).where("enterprise_id", "=", enterpriseId).execute();
    }
    const { time_zone } = await this.db.selectFrom("enterprise").select("time_zone").where("enterprise_id", "=", enterpriseId).executeTakeFirstOrThrow();
    const layout = layoutFor(time_zone, Math.floor(Date.now() / 1000));
    await this.db.insertInto("usage_layout")
      .values({ enterprise_id: enterpriseId, version: USAGE_LAYOUT_VERSION, time_zone: layout.timeZone, hour_phase: layout.hourPhase }).execute();
    return layout;
  }

  async add(enterpriseId: string, { grains: delta, memberDays, sums }: RollupAdditions): Promise<void> {
    // One bitmap and one buffer for every row: a bitmap and a Buffer per row (native objects with finalizers) cost several times its write.
    const scratch = new RoaringBitmap32();
    const bytes = new GrowingBytes();
    for (const [grain, entries] of delta) {
      const keys: Array<[period: number, modelId: number]> = [];
      for (const [period, models] of entries) for (const modelId of models.keys()) keys.push([period, modelId]);
      for (const part of chunks(keys)) {
        const stored = new Map((await this.storedRows(enterpriseId, grain, part)).map((row) => [`${row.period},${row.model_id}`, row]));
        const sumRows: unknown[][] = [];
        const memberRows: unknown[][] = [];
        for (const [period, modelId] of part) {
          const entry = entries.get(period)!.get(modelId)!;
          const before = stored.get(`${period},${modelId}`);
          const members = before ? scratch.deserialize(before.members, "portable").addMany(entry.members) : scratch.copyFrom(entry.members);
          if (before) addEncodedSums(before.sums, sums, entry.row);
          const serialized = bytes.take(members.getSerializationSizeInBytes("portable"));
          members.serialize("portable", serialized);
          sumRows.push([enterpriseId, grain, period, modelId, members.size, encodeSums(sums, entry.row)]);
          memberRows.push([enterpriseId, grain, period, modelId, serialized,
            grain === DAY ? mergeMemberSums(before?.member_sums ?? null, memberDays.get(period)?.get(modelId) ?? new Map(), sums) : null]);
        }
        await this.db.executeQuery(CompiledQuery.raw(this.upsertText("usage_rollup", SUMS_COLUMNS, sumRows.length), sumRows.flat()));
        await this.db.executeQuery(CompiledQuery.raw(this.upsertText("usage_rollup_members", MEMBERS_COLUMNS, memberRows.length), memberRows.flat()));
        bytes.reset();
      }
    }
  }

  /** The enterprise's pending events, and the pending rows (ingestions) holding them. */
  async pending(enterpriseId: string): Promise<{ events: number; rows: number }> {
    const row = await this.db.selectFrom("usage_rollup_pending")
      .select((eb) => [eb.fn.sum<number | string | null>("event_count").as("events"), eb.fn.countAll<number | string>().as("rows")])
      .where("enterprise_id", "=", enterpriseId).executeTakeFirst();
    return { events: Number(row?.events ?? 0), rows: Number(row?.rows ?? 0) };
  }

  /** One usage_rollup_pending row (USAGE TEXT, usage-sums-codec.ts), until takePending adds them. */
  async holdPending(enterpriseId: string, ingestion: number, events: readonly StoredEvent[]): Promise<void> {
    const entries = events.map((e) => `${e.memberKey},${e.modelId},${e.ts},${e.inputTokens},${e.outputTokens},${e.basicMicros},${e.payGoMicros}`);
    await this.db.insertInto("usage_rollup_pending")
      .values({ enterprise_id: enterpriseId, ingestion, event_count: events.length, events: entries.join(";") }).execute();
  }

  /** Deletes them too: the delta is added to the rollups in the same transaction. */
  async takePending(enterpriseId: string, delta: RollupDelta): Promise<void> {
    const rows = await this.db.selectFrom("usage_rollup_pending").select("events").where("enterprise_id", "=", enterpriseId).execute();
    if (rows.length === 0) return;
    for (const { events } of rows) {
      forEachEntry(events, 7, (v) => delta.add(v[0] as number, v[1] as number, v[2] as number, v[3]!, v[4]!, v[5]!, v[6]!));
    }
    await this.db.deleteFrom("usage_rollup_pending").where("enterprise_id", "=", enterpriseId).execute();
  }

  private upsertText(table: "usage_rollup" | "usage_rollup_members", columns: readonly string[], rows: number): string {
    return insertText(this.bulk, table, columns, KEY_COLUMNS, columns.slice(KEY_COLUMNS.length), rows);
  }

  /**
   * By pair, not every model of the periods: a batch spread over a day touches about half its quarters' model rows. CROSS JOIN keeps
   * SQLite's join order, pairs first: else it scans members rows.
   */
  private async storedRows(enterpriseId: string, grain: Grain, keys: ReadonlyArray<readonly [number, number]>): Promise<StoredRollup[]> {
    const text = this.bulk.texts.of("rollups: stored", keys.length, (count) => {
      const postgres = this.bulk.dialect === "postgres";
      const pairs = Array.from({ length: count }, (_, i) => (postgres ? `($${2 * i + 1}::bigint, $${2 * i + 2}::integer)` : "(?, ?)")).join(", ");
      const [enterprise, grainValue] = postgres ? [`$${2 * count + 1}`, `$${2 * count + 2}::integer`] : ["?", "?"];
      return `with k(p, m) as (values ${pairs})
        select r.period, r.model_id, r.sums, m.members, m.member_sums
        from k cross join usage_rollup r cross join usage_rollup_members m
        where r.enterprise_id = ${enterprise} and r.grain = ${grainValue} and r.period = k.p and r.model_id = k.m
          and m.enterprise_id = r.enterprise_id and m.grain = r.grain and m.period = k.p and m.model_id = k.m`;
    });
    return (await this.db.executeQuery<StoredRollup>(CompiledQuery.raw(text, [...keys.flat(), enterpriseId, grain]))).rows;
  }

  async rows(enterpriseId: string, grain: Grain, periods: readonly number[], models: "each" | "all", withMembers: boolean): Promise<RollupRow[]> {
    if (periods.length === 0) return [];
    const rows = await this.db.selectFrom("usage_rollup as r")
      .$if(withMembers, (qb) => qb.innerJoin("usage_rollup_members as m", (join) => join.onRef("m.enterprise_id", "=", "r.enterprise_id")
        .onRef("m.grain", "=", "r.grain").onRef("m.period", "=", "r.period").onRef("m.model_id", "=", "r.model_id")))
      .select(["r.period", "r.model_id", "r.member_count", "r.sums", withMembers ? sql<Uint8Array>`m.members`.as("members") : sql<null>`null`.as("members")])
      .where("r.enterprise_id", "=", enterpriseId).where("r.grain", "=", grain).where(among(this.bulk.dialect, "r.period", periods, "bigint"))
      .where("r.model_id", models === "all" ? "=" : ">", 0).execute();
    const sums = new ExactSums(rows.length);
    return rows.map((row, i) => {
      addEncodedSums(row.sums, sums, i);
      return { period: row.period, modelId: row.model_id, memberCount: row.member_count, sums, row: i, members: row.members ?? undefined };
    });
  }

  /**
   * Each (member, model)'s sums of one day of the layout (of `only` these members, in ascending order, when given): what its per-model
   * rows keep.
   */
  async dayPairs(enterpriseId: string, day: number, only?: readonly number[]): Promise<MemberModelSums[]> {
    const models = (await this.memberDays(enterpriseId, [day], "each")).map(({ modelId, memberSums }) => ({ modelId, members: decodeMemberSums(memberSums) }));
    const sums = new ExactSums(only ? 0 : models.reduce((count, { members }) => count + members.count, 0));
    const pairs: MemberModelSums[] = [];
    for (const { modelId, members } of models) {
      for (let m = 0, at = 0; m < members.count; m++) {
        if (only) { // both in key order: one walk
          while (only[at]! < members.keys[m]!) at++;
          if (only[at] !== members.keys[m]) continue;
        }
        const row = sums.newRow();
        for (let i = 0; i < SUMS; i++) sums.addValue(row, i, members.columns[i]![m]!);
        pairs.push({ memberKey: members.keys[m]!, modelId, sums, row });
      }
    }
    return pairs;
  }

  /** Each member's sums of each day, over all models or (`models` "each") of each model. */
  async memberDays(enterpriseId: string, days: readonly number[], models: "each" | "all" = "all")
    : Promise<Array<{ day: number; modelId: number; memberSums: Uint8Array }>> {
    if (days.length === 0) return [];
    const rows = await this.db.selectFrom("usage_rollup_members").select(["period", "model_id", "member_sums"])
      .where("enterprise_id", "=", enterpriseId).where("grain", "=", DAY).where(among(this.bulk.dialect, "period", days, "bigint"))
      .where("model_id", models === "all" ? "=" : ">", ALL_MODELS).execute();
    return rows.map((row) => ({ day: row.period, modelId: row.model_id, memberSums: row.member_sums ?? new Uint8Array() }));
  }
}

/** Undefined unless the row is of this version. */
export function currentLayout(row: { version: number | null; time_zone: string | null; hour_phase: number | null } | undefined): RollupLayout | undefined {
  if (row?.version !== USAGE_LAYOUT_VERSION) return undefined;
  return { timeZone: row.time_zone!, hourPhase: row.hour_phase! };
}

/** Slices of a buffer one after another; a new buffer when one is full (the slices taken stay valid). */
class GrowingBytes {
  private buffer = Buffer.allocUnsafe(1 << 16);
  private used = 0;

  take(length: number): Buffer {
    if (this.used + length > this.buffer.length) {
      this.buffer = Buffer.allocUnsafe(Math.max(1 << 16, 2 * length));
      this.used = 0;
    }
    const slice = this.buffer.subarray(this.used, this.used + length);
    this.used += length;
    return slice;
  }

  /** Once the slices are written: the buffer is reused. */
  reset(): void {
    this.used = 0;
  }
}
