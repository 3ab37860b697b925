// The usage report's window limits, alone so the browser console (console/) enforces the same numbers without bundling the time arithmetic.
export const MAX_REPORT_DAYS = 366;
export const MAX_HOUR_REPORT_DAYS = 31;
