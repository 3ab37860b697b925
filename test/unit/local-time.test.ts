import { describe, expect, it } from "vitest";
import { DateTime } from "luxon";
import { dateRangeWindow, eachBucket, offsetReader, zoneOrDefault } from "../../src/domain/local-time.js";

const formats = new Map<string, Intl.DateTimeFormat>();

/** The zone's offset at `seconds`, in minutes, as the platform's Intl data gives it (one formatter per zone: making one is slow). */
function offsetMinutes(seconds: number, zone: string): number {
  let format = formats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-US", { timeZone: zone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" });
    formats.set(zone, format);
  }
  const parts = format.formatToParts(new Date(seconds * 1000));
  const get = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  return (Date.UTC(get("year"), get("month") - 1, get("day"), get("hour"), get("minute"), get("second")) / 1000 - seconds) / 60;
}

describe("local time", () => {
  it("day buckets last 23 and 25 hours on daylight-saving days and follow +05:45", () => {
    const hours = (zone: string, from: string, to: string) => {
      const { start, end } = dateRangeWindow(from, to, zone, ["from", "to"]);
      return [...eachBucket(start, end, zone, "day")].map((b) => [b.date, (b.end - b.start) / 3600]);
    };
    expect(hours("America/New_York", "2024-03-09", "2024-03-11")).toEqual([["2024-03-09", 24], ["2024-03-10", 23], ["2024-03-11", 24]]);
    expect(hours("America/New_York", "2024-11-03", "2024-11-03")).toEqual([["2024-11-03", 25]]);
    // America/Santiago jumps from 00:00 to 01:00 on 2026-09-06: that day starts at 01:00 and is 23 hours.
    expect(hours("America/Santiago", "2026-09-06", "2026-09-06")).toEqual([["2026-09-06", 23]]);
    const [cut, whole] = [...eachBucket(1_700_000_000 - 86_400, 1_700_000_000, "Asia/Kathmandu", "day")];
    expect(cut!.start).toBe(1_700_000_000 - 86_400); // the first bucket is cut at the window's start
    expect(new Date(whole!.start * 1000).toISOString()).toBe("2023-11-14T18:15:00.000Z"); // local midnight, +05:45
    // Hours start on the local hour: a quarter past each UTC hour in Kathmandu.
    expect([...eachBucket(1_700_000_000, 1_700_007_200, "Asia/Kathmandu", "hour")].map((b) => new Date(b.start * 1000).toISOString().slice(11, 16)))
      .toEqual(["22:13", "22:15", "23:15"]);
  });

  it("starts every day at local midnight across offset changes since 1970 (Kathmandu's +05:30 to +05:45, Monrovia's -00:44:30)", () => {
    const DAY = 86_400;
    /** Every day of the window (but the first, cut at its start) begins at local midnight of its own date. */
    const expectLocalMidnights = (start: number, end: number, zone: string) => {
      for (const bucket of [...eachBucket(start, end, zone, "day")].slice(1)) {
        const local = bucket.start + offsetMinutes(bucket.start, zone) * 60;
        // Local midnight, or the first instant of a date whose midnight was skipped (a change at 00:00).
        if (local % DAY !== 0 && offsetMinutes(bucket.start - 1, zone) === offsetMinutes(bucket.start, zone)) {
          throw new Error(`${zone} ${bucket.date} starts at local ${new Date(local * 1000).toISOString()}`);
        }
        if (new Date(local * 1000).toISOString().slice(0, 10) !== bucket.date) throw new Error(`${zone} ${bucket.date}: a different local date`);
      }
    };
    /** The instants (to the second) where the zone's offset changes, 1970 to 2030: a weekly scan, then bisection (these zones never change twice in a week). */
    const offsetChanges = (zone: string) => {
      const changes: number[] = [];
      for (let t = DAY, offset = offsetMinutes(t, zone); t < 1_900_000_000; t += 7 * DAY) {
        const weekLater = offsetMinutes(t + 7 * DAY, zone);
        if (weekLater === offset) continue;
        offset = weekLater;
        let [before, after] = [t, t + 7 * DAY];
        while (after - before > 1) {
          const middle = Math.floor((before + after) / 2);
          if (offsetMinutes(middle, zone) === offsetMinutes(before, zone)) before = middle;
          else after = middle;
        }
        changes.push(after);
      }
      return changes;
    };
    // Every day from 1970 to 1976 (a leap year; Monrovia's change), then the days around each offset change to 2030.
    for (const [zone, atLeast] of [["Asia/Kathmandu", 1], ["Africa/Monrovia", 1], ["America/Sao_Paulo", 60]] as const) {
      expectLocalMidnights(DAY, 189_302_400, zone);
      const changes = offsetChanges(zone);
      expect(changes.length, zone).toBeGreaterThanOrEqual(atLeast);
      for (const change of changes) expectLocalMidnights(change - 3 * DAY, change + 3 * DAY, zone);
    }
  });

  it("reads every zone's offset as luxon does, to the second (Monrovia's -00:44:30, Kathmandu's +05:45, UTC)", () => {
    const zones = Intl.supportedValuesOf("timeZone");
    expect(zones.length).toBeGreaterThan(300);
    // 1970 to 2037 in steps of 97 days and 7 hours: every season and hour of the day over the years.
    const instants = Array.from({ length: 260 }, (_, i) => i * (97 * 86_400 + 7 * 3600));
    for (const zone of [...zones, "UTC"]) {
      const read = offsetReader(zone);
      for (const ts of instants) {
        const luxon = Math.round(DateTime.fromSeconds(ts, { zone }).offset * 60);
        if (read(ts) !== luxon) throw new Error(`${zone} at ${ts}: ${read(ts)} s, luxon ${luxon} s`);
      }
    }
    expect(offsetReader("Africa/Monrovia")(86_400)).toBe(-(44 * 60 + 30));
    expect(offsetReader("Asia/Kathmandu")(1_700_000_000)).toBe(5 * 3600 + 45 * 60);
  });

  it("refuses an unknown zone and a bad date, naming the field", () => {
    expect(() => zoneOrDefault("Mars/Olympus", "UTC", "time_zone")).toThrow(/^time_zone: "Mars\/Olympus" is not an IANA time zone name/);
    expect(() => dateRangeWindow("2024-02-30", "2024-03-01", "UTC", ["start_date", "end_date"])).toThrow(/^start_date: "2024-02-30" is not a date/);
    expect(() => dateRangeWindow("2024-03-02", "2024-03-01", "UTC", ["start_date", "end_date"])).toThrow(/^end_date: 2024-03-01 is before start_date/);
  });
});
