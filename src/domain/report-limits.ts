// The usage report's window limits, alone so the browser console (console/) enforces the same numbers without bundling the time arithmetic.
export const MAX_REPORT_DAYS = 366;
export const MAX_HOUR_REPORT_DAYS = 31;
/** A report's answer holds at most this many (bucket, group) figures unless REPORT_MAX_FIGURES says otherwise. */
export const DEFAULT_REPORT_MAX_FIGURES = 100_000;
/** The least REPORT_MAX_FIGURES: every report without groups fits (at most 744 hour buckets). */
export const MIN_REPORT_MAX_FIGURES = 1_000;
/** Usage reports worked on at once by one server unless REPORT_MAX_RUNNING says otherwise: one of members takes hundreds of MB while it runs. */
export const DEFAULT_REPORT_MAX_RUNNING = 2;

/** What one server allows its usage reports (REPORT_MAX_FIGURES, REPORT_MAX_RUNNING). */
export interface ReportLimits {
  /** The most (bucket, group) figures an answer holds. */
  maxFigures: number;
  /** The most reports worked on at once; later ones wait their turn, in arrival order, while their call lasts. */
  maxRunning: number;
}

export const DEFAULT_REPORT_LIMITS: Readonly<ReportLimits> = Object.freeze({ maxFigures: DEFAULT_REPORT_MAX_FIGURES, maxRunning: DEFAULT_REPORT_MAX_RUNNING });
