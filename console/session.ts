// This tab's session, in its sessionStorage only (gone when the tab closes): the access token, never in
// a URL, a cookie or localStorage; and the range last applied, so a reload shows the same figures.
import type { Range } from "./range.js";

const TOKEN_KEY = "enterprise-admin.access-token";
const RANGE_KEY = "enterprise-admin.range";

export const session = {
  token(): string | undefined {
    return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
  },
  signIn(token: string): void {
    sessionStorage.setItem(TOKEN_KEY, token);
  },
  /** The token only: signing in again after an expiry keeps the range. */
  signOut(): void {
    sessionStorage.removeItem(TOKEN_KEY);
  },
  /** The range last applied; undefined when none was, or what is stored is not one (the caller checks its limits). */
  range(): Range | undefined {
    try {
      const kept = JSON.parse(sessionStorage.getItem(RANGE_KEY) ?? "null") as Partial<Range> | null;
      const dates = [kept?.from, kept?.to, kept?.timeZone];
      return dates.every((field) => typeof field === "string") && (kept?.granularity === "day" || kept?.granularity === "hour") ? kept as Range : undefined;
    } catch {
      return undefined;
    }
  },
  keepRange(range: Range | undefined): void {
    if (range) sessionStorage.setItem(RANGE_KEY, JSON.stringify(range));
    else sessionStorage.removeItem(RANGE_KEY);
  },
};
