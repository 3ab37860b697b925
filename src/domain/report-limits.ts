// The usage report's window limits, alone so the browser console (console/) enforces the same numbers without bundling the time arithmetic.
export const MAX_REPORT_DAYS = 366;
export const MAX_HOUR_REPORT_DAYS = 31;
/** A report's answer holds at most this many (bucket, group) figures unless REPORT_MAX_FIGURES says otherwise. */
export const DEFAULT_REPORT_MAX_FIGURES = 100_000;
/** The least REPORT_MAX_FIGURES: every report without groups fits (at most 744 hour buckets). */
export const MIN_REPORT_MAX_FIGURES = 1_000;
