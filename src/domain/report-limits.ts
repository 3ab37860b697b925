// The usage report's window limits, alone so the browser console (console/) enforces the same numbers
// without bundling the report's time arithmetic.
export const MAX_REPORT_DAYS = 366;
export const MAX_HOUR_REPORT_DAYS = 31;
/** The latest end of a report's or export's window: 10000-01-01T00:00:00Z, where events end (MAX_TIMESTAMP). */
export const LATEST_REPORT_END = 253_402_300_800;
