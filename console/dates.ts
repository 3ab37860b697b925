// Local dates (YYYY-MM-DD) of an IANA time zone and their midnights in Unix seconds, with the
// platform's Intl zone data: the same local midnights the server's day buckets start at.
const SECONDS_PER_DAY = 86_400;
const partsFormats = new Map<string, Intl.DateTimeFormat>();

function partsFormat(timeZone: string): Intl.DateTimeFormat {
  let format = partsFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit",
    });
    partsFormats.set(timeZone, format);
  }
  return format;
}

/** An IANA zone name ("Asia/Kolkata", "Etc/GMT+5", "UTC"): never an offset such as "+05:45", which Chromium takes and the API refuses. */
const ZONE_NAME = /^[A-Za-z][\w+-]*(?:\/[A-Za-z0-9][\w+-]*)*$/;

export function isTimeZone(name: string): boolean {
  // "Factory", tzdata's placeholder for "no zone set", is known to Chromium's Intl and not to the server's.
  if (!ZONE_NAME.test(name) || name.toLowerCase() === "factory") return false;
  try {
    partsFormat(name);
    return true;
  } catch {
    return false;
  }
}

function localParts(epochSeconds: number, timeZone: string): Record<string, number> {
  const parts: Record<string, number> = {};
  for (const part of partsFormat(timeZone).formatToParts(new Date(epochSeconds * 1000))) {
    if (part.type !== "literal") parts[part.type] = Number(part.value);
  }
  return parts;
}

/** Unix seconds of a UTC date and time. Not Date.UTC, which reads the years 0 to 99 as 1900 to 1999. */
function utcSeconds(year: number, month: number, day: number, hour = 0, minute = 0, second = 0): number {
  const time = new Date(0);
  time.setUTCFullYear(year, month - 1, day);
  return time.setUTCHours(hour, minute, second) / 1000;
}

/** The zone's offset from UTC at an instant, in seconds. */
function offsetAt(epochSeconds: number, timeZone: string): number {
  const p = localParts(epochSeconds, timeZone);
  return utcSeconds(p.year!, p.month!, p.day!, p.hour!, p.minute!, p.second!) - epochSeconds;
}

function utcDay(date: string): number {
  const [year, month, day] = date.split("-").map(Number);
  return utcSeconds(year!, month!, day!);
}

/**
 * Unix seconds of the first instant of `date` in the zone, as the server's day buckets start: its local
 * midnight, or, where clocks jump over midnight (America/Santiago, America/Havana), the jump itself;
 * a date the zone skipped (Pacific/Apia's 2011-12-30) starts where the next one does.
 */
export function midnight(date: string, timeZone: string): number {
  return dayStart(utcDay(date), timeZone);
}

/** The first instant of the day after `date`: the end of a range, for 9999-12-31 too (no date string past 9999). */
export function midnightAfter(date: string, timeZone: string): number {
  return dayStart(utcDay(date) + SECONDS_PER_DAY, timeZone);
}

/** `wall` is the local day's midnight as if the zone were UTC. */
function dayStart(wall: number, timeZone: string): number {
  const first = wall - offsetAt(wall, timeZone);
  const second = wall - offsetAt(first, timeZone);
  const starts = [first, second].filter((t) => localWall(t, timeZone) === wall);
  return starts.length > 0 ? Math.min(...starts) : dayStart(wall + SECONDS_PER_DAY, timeZone);
}

/** The local date of an instant, as its midnight if the zone were UTC. */
function localWall(epochSeconds: number, timeZone: string): number {
  const p = localParts(epochSeconds, timeZone);
  return utcSeconds(p.year!, p.month!, p.day!);
}

export function today(timeZone: string): string {
  return localDate(Date.now() / 1000, timeZone);
}

export function localDate(epochSeconds: number, timeZone: string): string {
  const p = localParts(Math.floor(epochSeconds), timeZone);
  return `${String(p.year).padStart(4, "0")}-${String(p.month).padStart(2, "0")}-${String(p.day).padStart(2, "0")}`;
}

export function localTime(epochSeconds: number, timeZone: string): string {
  const p = localParts(epochSeconds, timeZone);
  return `${localDate(epochSeconds, timeZone)} ${String(p.hour).padStart(2, "0")}:${String(p.minute).padStart(2, "0")}`;
}

export function addDays(date: string, days: number): string {
  return new Date((utcDay(date) + days * SECONDS_PER_DAY) * 1000).toISOString().slice(0, 10);
}

/** Days from `from` to `to`, both counted. */
export function daysInclusive(from: string, to: string): number {
  return Math.round((utcDay(to) - utcDay(from)) / SECONDS_PER_DAY) + 1;
}

export function isDate(text: string): boolean {
  return /^\d{4}-\d{2}-\d{2}$/.test(text) && addDays(text, 0) === text;
}
