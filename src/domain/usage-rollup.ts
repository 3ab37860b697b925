// The usage rollups' periods and deltas: sums per period and model with a member bitmap (docs/architecture.md, Usage storage).
import { DAY_SECONDS, HOUR_SECONDS, localDayAround, mod, offsetReader, ZoneOffsets } from "./local-time.js";
import { decimalValue, ExactSums, SUMS } from "./usage-totals.js";
import type { EventValue } from "./usage-event.js";
import { dayOf } from "./usage-window.js";

/**
 * The version of an enterprise's usage layout (usage_layout): the formats of its pre-aggregates, running totals and rollups. An
 * enterprise with another version (or none) is read from raw events, and ingestion adds no pre-aggregates to it, until `usage rebuild`.
 */
export const USAGE_LAYOUT_VERSION = 5;

// Quarter hours (every zone's midnights and hours fall on one, but for two offsets of before 1980: holdsDay), the layout's hours and
// days. Only days have a row per model besides ALL_MODELS: else a batch spread over a day would rewrite a row per hour and model.
export const QUARTER = 0;
export const HOUR = 1;
export const DAY = 2;
export type Grain = typeof QUARTER | typeof HOUR | typeof DAY;
const GRAINS: readonly Grain[] = [QUARTER, HOUR, DAY];

/** The model id of the rows summing every model (usage_model ids start at 1). */
export const ALL_MODELS = 0;

const QUARTER_SECONDS = 900;

export interface RollupLayout {
  timeZone: string;
  /** Where hours start: seconds past a UTC hour, a multiple of 900. */
  hourPhase: number;
}

/** Its hours phased by the zone's offset at `at` (Unix seconds). */
export function layoutFor(timeZone: string, at: number): RollupLayout {
  const phase = mod(-offsetReader(timeZone)(at), HOUR_SECONDS);
  return { timeZone, hourPhase: phase % QUARTER_SECONDS === 0 ? phase : 0 };
}

export class RollupPeriods {
  /**
   * The local days asked about so far, under each UTC day they overlap, and the last one (an ingestion's events come in no time order,
   * mostly of one or two days, but an import's or a rebuild's may fall on thousands).
   */
  private readonly days = new Map<number, Array<{ start: number; end: number }>>();
  private day = { start: 1, end: 0 };
  /** The day of each quarter asked (dayOfQuarter). */
  private readonly quarterDays = new Map<number, number>();
  private readonly offsets: ZoneOffsets | undefined;

  /** `window`: the seconds asked about, whose days are then found by arithmetic. */
  constructor(readonly layout: RollupLayout, window?: { start: number; end: number }) {
    this.offsets = window && new ZoneOffsets(layout.timeZone, window.start - 2 * DAY_SECONDS, window.end + 2 * DAY_SECONDS);
  }

  startOf(grain: Grain, ts: number): number {
    if (grain === QUARTER) return ts - mod(ts, QUARTER_SECONDS);
    if (grain === HOUR) return ts - mod(ts - this.layout.hourPhase, HOUR_SECONDS);
    return this.dayAround(ts).start;
  }

  endOf(grain: Grain, start: number): number {
    if (grain === QUARTER) return start + QUARTER_SECONDS;
    if (grain === HOUR) return start + HOUR_SECONDS;
    return this.dayAround(start).end;
  }

  /**
   * Whether the layout's day from `start` is what its day rows hold: a day whose bounds fall inside a quarter hour (an offset off the
   * quarter hour, such as Africa/Monrovia's -00:44:30 until 1972) shares that quarter with its neighbour, which holds it whole.
   */
  private holdsDay(start: number): boolean {
    return mod(start, QUARTER_SECONDS) === 0 && mod(this.endOf(DAY, start), QUARTER_SECONDS) === 0;
  }

  dayOfQuarter(quarter: number): number {
    let day = this.quarterDays.get(quarter);
    if (day === undefined) this.quarterDays.set(quarter, (day = this.startOf(DAY, quarter)));
    return day;
  }

  /** Each day worked out once: a live batch spread over the last 24 hours goes back and forth between two. */
  private dayAround(ts: number): { start: number; end: number } {
    if (ts >= this.day.start && ts < this.day.end) return this.day;
    let day = this.days.get(dayOf(ts))?.find((known) => ts >= known.start && ts < known.end);
    if (!day) {
      day = this.offsets?.dayAround(ts) ?? localDayAround(ts, this.layout.timeZone);
      for (let utcDay = dayOf(day.start); utcDay * DAY_SECONDS < day.end; utcDay++) {
        const overlapping = this.days.get(utcDay);
        if (overlapping) overlapping.push(day);
        else this.days.set(utcDay, [day]);
      }
    }
    return (this.day = day);
  }

  /**
   * [start, end) as the coarsest whole periods of `grains` (coarsest first) that fit, in time order, and the rest as raw ranges:
   * with every grain, only a window edge off a quarter hour; with days alone, whatever is not a whole day of the layout's zone.
   */
  cover(start: number, end: number, grains: readonly Grain[] = [DAY, HOUR, QUARTER]) {
    const finest = grains[grains.length - 1]!;
    const periods: Array<{ grain: Grain; start: number }> = [];
    const raw: Array<{ from: number; to: number }> = [];
    let t = start;
    while (t < end) {
      const grain = grains.find((g) => this.startOf(g, t) === t && this.endOf(g, t) <= end && (g !== DAY || this.holdsDay(t)));
      if (grain !== undefined) {
        periods.push({ grain, start: t });
        t = this.endOf(grain, t);
        continue;
      }
      const to = Math.min(end, this.endOf(finest, this.startOf(finest, t)));
      raw.push({ from: t, to });
      t = to;
    }
    return { periods, raw };
  }
}

/** A period's usage of one model (or ALL_MODELS): its row of the delta's sums, its members (repeats allowed). */
export interface RollupEntry {
  row: number;
  members: number[];
}

export type GrainEntries = Map<number, Map<number, RollupEntry>>;

/** Each member's sums per day and model, ALL_MODELS too: day -> model id -> member key -> row. */
export type MemberDays = Map<number, Map<number, Map<number, number>>>;

/** Every grain's entries and the members' day sums, all rows of `sums`. */
export interface RollupAdditions {
  grains: Map<Grain, GrainEntries>;
  memberDays: MemberDays;
  sums: ExactSums;
}

export class RollupDelta {
  private quarters: GrainEntries = new Map();
  private memberDays: MemberDays = new Map();
  /** A row per quarter entry and member day: no object per sum. */
  private sums = new ExactSums(1024);
  size = 0; // events held

  constructor(readonly periods: RollupPeriods) {}

  add(memberKey: number, modelId: number, ts: number, inputTokens: EventValue, outputTokens: EventValue,
    basicMicros: EventValue, payGoMicros: EventValue): void {
    const { sums } = this;
    const quarter = this.periods.startOf(QUARTER, ts);
    const entry = entryOf(this.quarters, quarter, modelId, sums);
    sums.addEvent(entry.row, inputTokens, outputTokens, basicMicros, payGoMicros);
    entry.members.push(memberKey);
    const day = this.periods.dayOfQuarter(quarter);
    let models = this.memberDays.get(day);
    if (!models) this.memberDays.set(day, (models = new Map()));
    sums.addEvent(memberRow(models, modelId, memberKey, sums), inputTokens, outputTokens, basicMicros, payGoMicros);
    sums.addEvent(memberRow(models, ALL_MODELS, memberKey, sums), inputTokens, outputTokens, basicMicros, payGoMicros);
    this.size++;
  }

  /** Every grain's entries, made from the quarters (each lies in one hour and one day), and the members' day sums. Empties the delta. */
  take(): RollupAdditions {
    const { sums } = this;
    const byGrain = new Map<Grain, GrainEntries>(GRAINS.map((g) => [g, new Map()]));
    // In time order: the periods' days are then looked up once each.
    for (const [quarter, models] of [...this.quarters].sort(([x], [y]) => x - y)) {
      for (const [modelId, entry] of models) {
        for (const grain of GRAINS) {
          const start = this.periods.startOf(grain, quarter);
          if (grain === DAY) mergeInto(entryOf(byGrain.get(grain)!, start, modelId, sums), entry, sums);
          mergeInto(entryOf(byGrain.get(grain)!, start, ALL_MODELS, sums), entry, sums);
        }
      }
    }
    const additions = { grains: byGrain, memberDays: this.memberDays, sums };
    this.quarters = new Map();
    this.memberDays = new Map();
    this.sums = new ExactSums(1024);
    this.size = 0;
    return additions;
  }
}

/** The member's row of a day's sums of one model, made when new. */
function memberRow(models: Map<number, Map<number, number>>, modelId: number, memberKey: number, sums: ExactSums): number {
  let members = models.get(modelId);
  if (!members) models.set(modelId, (members = new Map()));
  let row = members.get(memberKey);
  if (row === undefined) members.set(memberKey, (row = sums.newRow()));
  return row;
}

function mergeInto(into: RollupEntry, from: RollupEntry, sums: ExactSums): void {
  sums.addRow(into.row, sums, from.row);
  for (const member of from.members) into.members.push(member);
}

function entryOf(entries: GrainEntries, start: number, modelId: number, sums: ExactSums): RollupEntry {
  let models = entries.get(start);
  if (!models) entries.set(start, (models = new Map()));
  let entry = models.get(modelId);
  if (!entry) models.set(modelId, (entry = { row: sums.newRow(), members: [] }));
  return entry;
}

/** The stored form of a row: its five sums in SUMS order, decimal, exact at any size. */
export function encodeSums(sums: ExactSums, row: number): string {
  let text = String(sums.exact(row, 0));
  for (let i = 1; i < SUMS; i++) text += ` ${sums.exact(row, i)}`;
  return text;
}

export function addEncodedSums(text: string, into: ExactSums, row: number): void {
  const parts = text.split(" ");
  if (parts.length !== SUMS || parts.some((p) => !/^\d+$/.test(p))) throw new Error(`usage rollup: malformed sums ${JSON.stringify(text)}`);
  for (let i = 0; i < SUMS; i++) into.addValue(row, i, decimalValue(parts[i]!));
}

