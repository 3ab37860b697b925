// The usage report and the daily trend, one engine for both (docs/architecture.md, Usage analytics).
import { createHash } from "node:crypto";
import { LRUCache } from "lru-cache";
import roaring from "roaring";
import type { GetUsageReportRequest } from "../../gen/enterprise_admin/v1/usage_pb.js";
import { invalidParameter } from "../domain/errors.js";
import { pushTo } from "../domain/list-maps.js";
import { dateRangeWindow, zoneIdentity, zoneOrDefault, type TimeBucket } from "../domain/local-time.js";
import { decodePageToken, effectivePageSize, encodePageToken } from "../domain/page-token.js";
import { DEFAULT_REPORT_LIMITS, MAX_REPORT_DAYS, type ReportLimits } from "../domain/report-limits.js";
import { FiguresPastBound, ReportCells, type GroupFigures, type PeriodFigures } from "../domain/report-cells.js";
import { compareGroups, departmentGroupRanks, groupDimensions, Grouping, ranksOf, type GroupDimension, type GroupKey } from "../domain/report-groups.js";
import { compareCodePoints, compareModels } from "../domain/usage-event.js";
import { ExactSums } from "../domain/usage-totals.js";
import { bucketKind, bucketParts, checkReportWindow, planBuckets, type BucketKind } from "../domain/usage-window.js";
import { ROOT_PARENT_ID } from "../domain/department-tree.js";
import { DAY, encodeSums, HOUR, QUARTER, RollupPeriods, type Grain, type RollupLayout } from "../domain/usage-rollup.js";
import { decodeMemberSums } from "../storage/member-day-sums.js";
import { ReportTurns } from "./report-turns.js";
import type { DepartmentRepository } from "../storage/department-repository.js";
import type { MemberRow, UsageRepository } from "../storage/usage-repository.js";
import { namedIn, resolveNamedMembers } from "./named-members.js";
import { DAYS_READ_AT_ONCE, ReportDayCache, type DayLoader } from "./report-day-cache.js";
import { takeTurn } from "./take-turn.js";

const { RoaringBitmap32 } = roaring;

/** Department scopes kept (each up to a map of the enterprise's members), least recently used first out. */
const DEPARTMENT_SCOPES_KEPT = 16;
/** The longest span of buckets that one statement sums per model (addEvents): a local day, 25 hours on a daylight-saving day. */
const COUNTED_SPAN_SECONDS = 25 * 3600;

export type UsageReportRequest = Omit<GetUsageReportRequest, "$typeName" | "$unknown">;

/** A window in buckets, grouped, over some members (undefined: all). */
interface ReportPlan {
  enterpriseId: string;
  layout: RollupLayout | undefined;
  start: number;
  end: number;
  buckets: TimeBucket[];
  dimensions: GroupDimension[];
  members: readonly number[] | undefined;
  departments?: DepartmentScope;
  /** The page's members, when grouping by member. */
  pageMembers?: readonly MemberRow[];
}

interface DepartmentScope {
  groupsOf: Map<number, string[]>;
  /** A hash of the department and every (member, group) placement: which day figures of the day cache are this subtree's. */
  fingerprint: string;
  names: Map<string, string>;
  ranks: Map<string, number>;
  /** Kept with the scope, so that each member's groups are worked out once, not per report. */
  grouping: Grouping;
}

export class UsageReports {
  private readonly dayCache = new ReportDayCache();
  private readonly departmentScopes = new LRUCache<string, DepartmentScope>({ max: DEPARTMENT_SCOPES_KEPT });

  private readonly maxFigures: number;
  /** The reports being worked on (at most `limits.maxRunning`) and those waiting their turn, taken in turn by the enterprises. */
  private readonly turns: ReportTurns;

  /** `limits.maxFigures` bounds a report's answer (REPORT_MAX_FIGURES); the daily trend has at most 366 figures and is not bounded. */
  constructor(private readonly usage: UsageRepository, private readonly departments: DepartmentRepository, limits: ReportLimits = DEFAULT_REPORT_LIMITS) {
    this.maxFigures = limits.maxFigures;
    this.turns = new ReportTurns(limits.maxRunning);
  }

  /** Reports being worked on, and reports waiting for their turn (the service's metrics). */
  load(): { running: number; waiting: number } {
    return this.turns.load();
  }

  /** Checked at once; worked on in its turn (REPORT_MAX_RUNNING at a time, taken in turn by the enterprises). */
  async report(enterpriseId: string, request: UsageReportRequest, signal: AbortSignal) {
    const kind = bucketKind(request.bucket);
    const window = checkReportWindow(request.startTime, request.endTime, kind);
    const dimensions = groupDimensions(request.groupBy);
    if (!dimensions.includes("member") && request.pageToken !== "") throw invalidParameter(`page_token: pages exist only when group_by includes "member"`);
    zoneOrDefault(request.timeZone, "UTC", "time_zone"); // a zone named is checked now; the enterprise's, in the turn
    namedIn(request);
    return this.turns.run(enterpriseId, signal, () => this.reportInTurn(enterpriseId, request, kind, window, dimensions, signal));
  }

  private async reportInTurn(enterpriseId: string, request: UsageReportRequest, kind: BucketKind, { start, end }: { start: number; end: number },
    dimensions: GroupDimension[], signal: AbortSignal) {
    signal.throwIfAborted();
    const byMember = dimensions.includes("member");
    const settings = await this.usage.settingsWithRollups(enterpriseId);
    const zone = zoneOrDefault(request.timeZone, settings.time_zone, "time_zone");

    const named = await resolveNamedMembers(this.usage, enterpriseId, request, false);
    const departments = request.departmentId !== "" || dimensions.includes("department")
      ? await this.departmentScope(enterpriseId, request.departmentId, settings.directory_version)
      : undefined;
    // Grouped by department (not by member), a member outside the subtree is in no group: no filter needed.
    const inScope = departments && (byMember || !dimensions.includes("department")) ? departments.groupsOf : undefined;
    let members = named?.members.map((m) => m.member_key);
    if (inScope) members = members?.filter((key) => inScope.has(key)) ?? [...inScope.keys()];
    const buckets = planBuckets(start, end, zone, kind);
    const { layout } = settings;

    let pageMembers: MemberRow[] | undefined;
    let query = "";
    let more = false;
    if (byMember) {
      // Bound to every field but the page's own (AIP-158: page_size may change between pages), and to the zone used, named or not, in
      // any case or by any alias.
      query = JSON.stringify(["usage-report", String(request.startTime), String(request.endTime), zoneIdentity(zone), kind, dimensions,
        request.departmentId, request.userIds, request.emails]);
      // No more members than would fit with one figure in every bucket: the page's figures are only counted once they are made.
      const pageSize = Math.min(effectivePageSize(request.pageSize, { default: 100, max: 1000 }), Math.max(1, Math.floor(this.maxFigures / buckets.length)));
      const after = decodePageToken(query, request.pageToken);
      const active = await this.activeMembers({ enterpriseId, layout, start, end, buckets, dimensions, members }, signal);
      const ordered = active.sort((a, b) => compareCodePoints(a.user_id, b.user_id))
        .filter((member) => after === undefined || compareCodePoints(member.user_id, after) > 0);
      pageMembers = ordered.slice(0, pageSize);
      more = ordered.length > pageSize;
      members = pageMembers.map((m) => m.member_key);
    }

    const plan = { enterpriseId, layout, start, end, buckets, dimensions, members, departments, pageMembers };
    const answer = await this.run(plan, signal, this.maxFigures);
    // The page ends at its last member shown: fewer than asked for when the figures of all of them would not fit.
    const shown = answer.pageMembers;
    const nextPageToken = shown && (more || shown.length < pageMembers!.length) ? encodePageToken(query, shown[shown.length - 1]!.user_id) : "";
    return {
      currency: settings.currency, timeZone: zone, buckets: answer.buckets, nextPageToken,
      notFoundUserIds: named?.notFoundUserIds ?? [], notFoundEmails: named?.notFoundEmails ?? [],
    };
  }

  /** The report's day buckets of [start_date, end_date], ungrouped. */
  async coreMetrics(enterpriseId: string, request: { startDate: string; endDate: string; timeZone: string }, signal: AbortSignal) {
    const settings = await this.usage.settingsWithRollups(enterpriseId);
    const zone = zoneOrDefault(request.timeZone, settings.time_zone, "time_zone");
    const { start, end, days } = dateRangeWindow(request.startDate, request.endDate, zone, ["start_date", "end_date"]);
    if (days > MAX_REPORT_DAYS) throw invalidParameter(`start_date to end_date: ${days} days > ${MAX_REPORT_DAYS} (both dates count)`);
    const { buckets } = await this.run({
      enterpriseId, layout: settings.layout, start, end, buckets: planBuckets(start, end, zone, "day"), dimensions: [], members: undefined,
    }, signal, Infinity);
    return { currency: settings.currency, timeZone: zone, items: buckets.map((b) => ({ date: b.date, ...b.groups[0]!.figures })) };
  }

  /** Kept per directory version, read before the scope is made: a scope kept under a version is never older than it. */
  private async departmentScope(enterpriseId: string, departmentId: string, directoryVersion: number): Promise<DepartmentScope> {
    const key = JSON.stringify([enterpriseId, departmentId, directoryVersion]); // ids may hold any character: no separator is safe
    let scope = this.departmentScopes.get(key);
    if (!scope) this.departmentScopes.set(key, (scope = await this.readDepartmentScope(enterpriseId, departmentId)));
    return scope;
  }

  /**
   * Each member's groups under `departmentId` ("" or "0": the root): the direct children whose subtree holds it, or the department
   * itself for a member placed in it. An enterprise without departments has an empty root.
   */
  private async readDepartmentScope(enterpriseId: string, departmentId: string): Promise<DepartmentScope> {
    const root = departmentId === "" || departmentId === ROOT_PARENT_ID;
    const [self] = await this.departments.findByIds(enterpriseId, root ? [] : [departmentId], root);
    if (!self) {
      if (root) return { groupsOf: new Map(), fingerprint: "", names: new Map(), ranks: new Map(), grouping: new Grouping(["department"], new Map()) };
      throw invalidParameter(`department_id: ${JSON.stringify(departmentId)} is not a department of this enterprise`);
    }
    const [children, placements] = await Promise.all([
      this.departments.childrenOf(enterpriseId, self.department_id),
      this.departments.subtreeMembers(enterpriseId, self.department_id),
    ]);
    const groupsOf = new Map<number, string[]>();
    for (const { member_key, group_id } of placements) pushTo(groupsOf, member_key, group_id);
    return {
      groupsOf,
      fingerprint: createHash("sha256").update(JSON.stringify([self.department_id, placements])).digest("base64"),
      names: new Map([self, ...children].map((d) => [d.department_id, d.name])),
      ranks: departmentGroupRanks(self.department_id, children),
      grouping: new Grouping(["department"], groupsOf),
    };
  }

  /**
   * Raw events of [start, end) summed per (member, model), a bucket's part of one UTC day at a time. Buckets wholly inside are summed
   * whole by model alone (countModels), and kept by the day cache for the whole enterprise by model or a whole subtree by department.
   */
  private async addEvents(cells: ReportCells, plan: ReportPlan, start: number, end: number, signal: AbortSignal): Promise<void> {
    const { enterpriseId, members, departments, layout } = plan;
    const byModel = groupedOnlyBy(plan, "model");
    const keep = layout !== undefined && members === undefined && (byModel || wholeSubtreeByDepartment(plan));
    const whole: number[] = [];
    for (const { bucket, from, to } of bucketParts(cells.buckets, start, end)) {
      await takeTurn(signal);
      const b = cells.buckets[bucket]!;
      if ((byModel || keep) && start <= b.start && b.end <= end && b.end - b.start <= COUNTED_SPAN_SECONDS) {
        if (from === b.start) whole.push(bucket);
        continue;
      }
      cells.addPairs(bucket, await this.usage.memberModelSums(enterpriseId, from, to, members));
    }
    if (whole.length === 0) return;
    const ranges = whole.map((bucket) => cells.buckets[bucket]!);
    const sum = (some: readonly TimeBucket[]) => byModel ? this.countModels(enterpriseId, some, members, signal)
      : this.departmentGroups(enterpriseId, some, departments!.grouping, signal);
    const figures = !keep ? await sum(ranges)
      : await this.keptBuckets(enterpriseId, layout, byModel ? "model" : `department\n${departments!.fingerprint}`, ranges, sum, signal);
    figures.forEach((groups, i) => groups.forEach((group) => cells.addPeriod(whole[i]!, group)));
  }

  /** Each range's models (ranges in time order, a day at most), one statement per run of meeting ranges within COUNTED_SPAN_SECONDS. */
  private async countModels(enterpriseId: string, ranges: readonly TimeBucket[], members: readonly number[] | undefined, signal: AbortSignal)
    : Promise<PeriodFigures[][]> {
    const models: PeriodFigures[][] = ranges.map(() => []);
    for (let first = 0, last = 1; first < ranges.length; first = last, last = first + 1) {
      await takeTurn(signal);
      while (last < ranges.length && ranges[last]!.start === ranges[last - 1]!.end && ranges[last]!.end - ranges[first]!.start <= COUNTED_SPAN_SECONDS) last++;
      for (const model of await this.usage.modelSums(enterpriseId, ranges.slice(first, last), members)) models[first + model.range]!.push(model);
    }
    return models;
  }

  private async departmentGroups(enterpriseId: string, ranges: readonly TimeBucket[], grouping: Grouping, signal: AbortSignal)
    : Promise<PeriodFigures[][]> {
    const rangeCells = new ReportCells(ranges, grouping);
    for (const [i, range] of ranges.entries()) {
      for (const { from, to } of bucketParts([range], range.start, range.end)) {
        await takeTurn(signal);
        rangeCells.addPairs(i, await this.usage.memberModelSums(enterpriseId, from, to));
      }
    }
    return ranges.map((_, i) => rangeCells.periods(i, false));
  }

  /** Through the day cache, each range stamped with the all-models rows of the rollup days it overlaps: a new event on them sums it again. */
  private async keptBuckets(enterpriseId: string, layout: RollupLayout, scope: string, ranges: readonly TimeBucket[],
    sum: (ranges: readonly TimeBucket[]) => Promise<PeriodFigures[][]>, signal: AbortSignal): Promise<PeriodFigures[][]> {
    const periods = new RollupPeriods(layout, { start: ranges[0]!.start, end: ranges[ranges.length - 1]!.end });
    const daysOf = ranges.map((range) => {
      const days: number[] = [];
      // From the day row holding the range's first quarter hour: it may begin the day before (holdsDay).
      for (let day = periods.dayOfQuarter(periods.startOf(QUARTER, range.start)); day < range.end; day = periods.endOf(DAY, day)) days.push(day);
      return days;
    });
    const dayStamps = await this.dayStamps(enterpriseId, [...new Set(daysOf.flat())]);
    const keyOf = (range: TimeBucket) => `${range.start}+${range.end - range.start}`;
    const stamps = new Map(ranges.map((range, i) => [keyOf(range), daysOf[i]!.map((day) => dayStamps.get(day) ?? "").join(";")]));
    const rangeOf = new Map(ranges.map((range) => [keyOf(range), range]));
    const kept = await this.dayCache.days(JSON.stringify([enterpriseId, scope]), stamps, false, async (keys) => {
      const summed = await sum(keys.map((key) => rangeOf.get(key)!));
      return new Map(keys.map((key, i) => [key, summed[i]!]));
    }, signal);
    return ranges.map((range) => kept.get(keyOf(range))!);
  }

  /** A day's all-models member count and sums, which every event on the day changes (none without usage). */
  private async dayStamps(enterpriseId: string, days: readonly number[]): Promise<Map<number, string>> {
    return new Map((await this.usage.rollups.rows(enterpriseId, DAY, days, "all", false))
      .map((row) => [row.period, `${row.memberCount} ${encodeSums(row.sums, row.row)}`]));
  }

  /** The whole enterprise's usage from the rollups; by model only days have rows, read through the day cache. Returns what to read raw. */
  private async addRollups(cells: ReportCells, plan: ReportPlan, layout: RollupLayout, signal: AbortSignal): Promise<Span[]> {
    if (plan.dimensions.includes("model")) {
      const { periods: days, raw } = coverBuckets(plan, layout);
      await this.addKeptDays(cells, plan.enterpriseId, `${layout.timeZone}\nmodel`, days, async (some, withMembers) => {
        const byDay = new Map<number, PeriodFigures[]>();
        for (const row of await this.usage.rollups.rows(plan.enterpriseId, DAY, some, "each", withMembers)) pushTo(byDay, row.period, row);
        return byDay;
      }, signal);
      return raw;
    }
    const { periods, raw } = coverBuckets(plan, layout, [DAY, HOUR, QUARTER]);
    // Per grain and whether alone in its bucket (its stored count is then the bucket's, else its members are read): period -> bucket.
    const bucketOf = new Map<string, { grain: Grain; alone: boolean; buckets: Map<number, number> }>();
    for (const { grain, start, bucket, alone } of periods) {
      const key = `${grain}:${alone}`;
      if (!bucketOf.has(key)) bucketOf.set(key, { grain, alone, buckets: new Map() });
      bucketOf.get(key)!.buckets.set(start, bucket);
    }
    for (const { grain, alone, buckets } of bucketOf.values()) {
      await takeTurn(signal);
      for (const row of await this.usage.rollups.rows(plan.enterpriseId, grain, [...buckets.keys()], "all", !alone)) {
        cells.addPeriod(buckets.get(row.period)!, row);
      }
    }
    return raw;
  }

  /** Members' day sums for the layout's whole days; by department over a whole subtree, through the day cache. Returns what to read raw. */
  private async addMemberDays(cells: ReportCells, plan: ReportPlan, layout: RollupLayout, signal: AbortSignal): Promise<Span[]> {
    const { enterpriseId, departments } = plan;
    const { periods: days, raw } = coverBuckets(plan, layout);
    if (departments && wholeSubtreeByDepartment(plan)) {
      // Days the cache lacks: their member sums added per group, each day its own bucket of dayCells.
      const dayCells = new ReportCells(days.map(({ start, end }) => ({ start, end, date: "" })), departments.grouping);
      const index = new Map(days.map(({ start }, i) => [start, i]));
      await this.addKeptDays(cells, enterpriseId, `${layout.timeZone}\ndepartment\n${departments.fingerprint}`, days, async (some, withMembers) => {
        for (const { day, memberSums } of await this.usage.rollups.memberDays(enterpriseId, some)) {
          dayCells.addMemberSums(index.get(day)!, decodeMemberSums(memberSums), !withMembers);
        }
        return new Map(some.map((day) => [day, dayCells.periods(index.get(day)!, withMembers)]));
      }, signal);
    } else {
      const dayOf = new Map(days.map((day) => [day.start, day]));
      for (let at = 0; at < days.length; at += DAYS_READ_AT_ONCE) {
        await takeTurn(signal);
        const some = days.slice(at, at + DAYS_READ_AT_ONCE).map(({ start }) => start);
        for (const { day, memberSums } of await this.usage.rollups.memberDays(enterpriseId, some)) {
          const { bucket, alone } = dayOf.get(day)!;
          cells.addMemberSums(bucket, decodeMemberSums(memberSums), alone);
        }
      }
    }
    return raw;
  }

  /** Each (member, model)'s sums of the layout's whole days, of the plan's members only. Returns what to read raw. */
  private async addDayPairs(cells: ReportCells, plan: ReportPlan, layout: RollupLayout, signal: AbortSignal): Promise<Span[]> {
    const { periods: days, raw } = coverBuckets(plan, layout);
    const members = plan.members && [...plan.members].sort((a, b) => a - b);
    for (const { start, bucket } of days) {
      await takeTurn(signal);
      cells.addPairs(bucket, await this.usage.rollups.dayPairs(plan.enterpriseId, start, members));
    }
    return raw;
  }

  /** Whole days of the layout into their buckets as the day cache's groups of `scope` (`load` makes a day it lacks or stamped anew). */
  private async addKeptDays(cells: ReportCells, enterpriseId: string, scope: string, days: readonly CoveredPeriod[], load: DayLoader,
    signal: AbortSignal): Promise<void> {
    const stamps = await this.dayStamps(enterpriseId, days.map(({ start }) => start));
    const kept = await this.dayCache.days(JSON.stringify([enterpriseId, scope]), stamps, days.some(({ alone }) => !alone), load, signal);
    for (const { start, bucket } of days) for (const period of kept.get(start) ?? []) cells.addPeriod(bucket, period);
  }

  /** The members with usage in the window (of the plan's members, when given): the rollup days' bitmaps ORed, the rest read raw. */
  private async activeMembers(plan: ReportPlan, signal: AbortSignal): Promise<MemberRow[]> {
    const active = new RoaringBitmap32();
    let raw: Span[] = [{ from: plan.start, to: plan.end }];
    if (plan.layout) {
      const cover = coverBuckets({ ...plan, buckets: [{ start: plan.start, end: plan.end, date: "" }] }, plan.layout);
      for (const row of await this.usage.rollups.rows(plan.enterpriseId, DAY, cover.periods.map(({ start }) => start), "all", true)) {
        active.orInPlace(RoaringBitmap32.deserialize(row.members!, "portable"));
      }
      raw = cover.raw;
    }
    for (const { from, to } of raw) {
      await takeTurn(signal);
      for (const { memberKey } of await this.usage.memberModelSums(plan.enterpriseId, from, to, plan.members)) active.add(memberKey);
    }
    return this.usage.membersByKeys(plan.enterpriseId, plan.members?.filter((key) => active.has(key)) ?? active.toArray());
  }

  /** The whole enterprise's usage from rollup periods, else members' day sums (of each model if by model), else raw events. */
  private async addUsage(cells: ReportCells, plan: ReportPlan, signal: AbortSignal): Promise<void> {
    const { layout } = plan;
    const wholeEnterprise = plan.members === undefined && plan.departments === undefined && plan.dimensions.every((d) => d === "model");
    const raw = !layout ? [{ from: plan.start, to: plan.end }]
      : wholeEnterprise ? await this.addRollups(cells, plan, layout, signal)
      : plan.dimensions.includes("model") ? await this.addDayPairs(cells, plan, layout, signal)
      : await this.addMemberDays(cells, plan, layout, signal);
    for (const { from, to } of raw) await this.addEvents(cells, plan, from, to, signal);
  }

  /** The buckets' groups, and the page's members shown: those of `plan.pageMembers` whose figures fit in `maxFigures`. */
  private async run(plan: ReportPlan, signal: AbortSignal, maxFigures: number) {
    const grouping = new Grouping(plan.dimensions, plan.departments?.groupsOf, plan.members);
    // Without a page, the bound holds from the first cell past it; a page is cut to its members that fit once all are made.
    const cells = new ReportCells(plan.buckets, grouping, plan.pageMembers ? Infinity : maxFigures);
    try {
      await this.addUsage(cells, plan, signal);
    } catch (error) {
      if (!(error instanceof FiguresPastBound)) throw error;
      throw invalidParameter(`the report would hold more (bucket, group) figures than this server's ${count(maxFigures)}: ${BOUND_ADVICE}`);
    }
    const pageMembers = plan.pageMembers && fittingFigures(cells.figuresByMember(), plan.pageMembers, maxFigures);

    const keys = grouping.byIndex;
    const modelIds = new Set(keys.map((key) => key.modelId).filter((id) => id >= 0));
    const models = await this.usage.modelsById(modelIds);
    const memberRows = new Map((pageMembers ?? []).map((m) => [m.member_key, m]));
    const order = compareGroups(plan.dimensions, {
      models: ranksOf(modelIds, (id) => id, (a, b) => compareModels(models.get(a)!, models.get(b)!)),
      members: ranksOf(memberRows.values(), (m) => m.member_key, (a, b) => compareCodePoints(a.user_id, b.user_id)),
      departments: plan.departments?.ranks ?? new Map(),
    });
    // Each group's place, worked out once: a bucket's groups are then sorted by a number each.
    const place: number[] = [];
    [...keys].sort(order).forEach((key, i) => (place[key.index] = i));
    // Each group's names, made once and shared by its figures in every bucket.
    const labelOf = (key: GroupKey) => {
      const model = models.get(key.modelId);
      const member = memberRows.get(key.memberKey);
      return {
        modelName: model?.model_name ?? "", modelType: model?.model_type ?? "", modelSource: model?.model_source ?? "",
        userId: member?.user_id ?? "", email: member?.email ?? "", formerMember: member !== undefined && member.removed_at !== null,
        departmentId: key.departmentId, departmentName: plan.departments?.names.get(key.departmentId) ?? "",
      };
    };
    const labels = keys.map(labelOf);
    const shown = (figures: GroupFigures[]) => (pageMembers ? figures.filter((f) => memberRows.has(f.key.memberKey)) : figures);
    // A turn every 10,000 figures, not every bucket (744 turns would add milliseconds to a small report): 100,000 took most of a second at once.
    const buckets = [];
    let sinceTurn = 0;
    for (const [index, bucket] of plan.buckets.entries()) {
      if (sinceTurn >= 10_000) {
        await takeTurn(signal);
        sinceTurn = 0;
      }
      const figures = shown(cells.groups(index)).sort((a, b) => place[a.key.index]! - place[b.key.index]!);
      const groups = figures.map((f) => ({ label: labels[f.key.index]!, figures: f }));
      if (plan.dimensions.length === 0 && groups.length === 0) {
        const key = { index: -1, modelId: -1, memberKey: -1, departmentId: "" };
        groups.push({ label: labelOf(key), figures: { key, activeMembers: 0, sums: new ExactSums(), row: 0 } });
      }
      buckets.push({ ...bucket, groups });
      sinceTurn += groups.length;
    }
    return { buckets, pageMembers };
  }
}

const count = (n: number) => n.toLocaleString("en-US");
const BOUND_ADVICE = `ask for fewer buckets (a shorter window, or a coarser bucket: "day" rather than "hour", "none" for one over the window) or fewer group_by fields; the usage export gives every (date, member, model) row`;

/**
 * The page's first members whose (bucket, group) figures together fit in `maxFigures` (a page may hold fewer than page_size, AIP-158).
 * `figures`: per member key.
 */
function fittingFigures(figures: Map<number, number>, page: readonly MemberRow[], maxFigures: number): MemberRow[] {
  let total = 0;
  let fit = 0;
  while (fit < page.length && (total += figures.get(page[fit]!.member_key) ?? 0) <= maxFigures) fit++;
  if (fit === 0 && page.length > 0) {
    const first = page[0]!;
    throw invalidParameter(`member ${JSON.stringify(first.user_id)} alone has ${count(figures.get(first.member_key)!)} (bucket, group) figures in this report, more than this server's ${count(maxFigures)}: ${BOUND_ADVICE}`);
  }
  return page.slice(0, fit);
}

/** Seconds [from, to). */
type Span = { from: number; to: number };

/** `alone`: the period is all of its bucket (its members are then counted, not kept). */
type CoveredPeriod = Pick<TimeBucket, "start" | "end"> & { grain: Grain; bucket: number; alone: boolean };

/** The plan's buckets as whole periods of `grains`, and the ranges none fits (read raw), each as long as it runs. */
function coverBuckets(plan: ReportPlan, layout: RollupLayout, grains: readonly Grain[] = [DAY]) {
  const rollups = new RollupPeriods(layout, plan);
  const periods: CoveredPeriod[] = [];
  const raw: Span[] = [];
  plan.buckets.forEach((bucket, index) => {
    const cover = rollups.cover(Math.max(plan.start, bucket.start), Math.min(plan.end, bucket.end), grains);
    const alone = cover.periods.length === 1 && cover.raw.length === 0;
    for (const { grain, start } of cover.periods) periods.push({ grain, start, end: rollups.endOf(grain, start), bucket: index, alone });
    for (const range of cover.raw) {
      const last = raw[raw.length - 1];
      if (last?.to === range.from) last.to = range.to; // one range across buckets: addEvents may count a day of hours at once
      else raw.push({ ...range });
    }
  });
  return { periods, raw };
}

function groupedOnlyBy(plan: ReportPlan, dimension: GroupDimension): boolean {
  return plan.dimensions.length === 1 && plan.dimensions[0] === dimension;
}

/** Grouped by department alone over a whole subtree (no member filter): what the day cache keeps per department scope. */
function wholeSubtreeByDepartment(plan: ReportPlan): boolean {
  return plan.departments !== undefined && plan.members === undefined && groupedOnlyBy(plan, "department");
}
