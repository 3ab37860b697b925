// Money is an integer of micro-units (1/1,000,000) from the database to the edge: a bigint, or a JS
// number while it is a safe integer (exact sums switch to bigint before 2^53, usage-totals.ts). These
// are the only two conversions: a decimal string with at most 6 decimals in, exactly 6 decimals out.

const DECIMAL = /^(0|[1-9]\d{0,17})(?:\.(\d{1,6}))?$/;
/** An amount in the common form, small enough to convert without BigInt: at most 7 whole digits. */
const SHORT_DECIMAL = /^(0|[1-9]\d{0,6})(?:\.(\d{1,6}))?$/;
const MICROS_SCALE = [1_000_000, 100_000, 10_000, 1_000, 100, 10, 1];

/** "0.0125" -> 12500n. Undefined for anything that is not a non-negative decimal with <= 6 decimals. */
export function parseMicros(text: string): bigint | undefined {
  const match = DECIMAL.exec(text);
  if (!match) return undefined;
  return BigInt(match[1]!) * 1_000_000n + BigInt((match[2] ?? "").padEnd(6, "0"));
}

/** As parseMicros, as a number without BigInt for an amount of at most 7 whole digits (an import's every line); else undefined. */
export function parseShortMicros(text: string): number | undefined {
  const short = SHORT_DECIMAL.exec(text);
  if (!short) return undefined;
  const fraction = short[2];
  return Number(short[1]) * 1_000_000 + (fraction === undefined ? 0 : Number(fraction) * MICROS_SCALE[fraction.length]!);
}

/** 12345600n (or 12345600) -> "12.345600"; -5n -> "-0.000005". A number must be a safe integer. */
export function formatMicros(micros: bigint | number): string {
  if (typeof micros === "number") {
    // The common case (thousands per usage answer), without BigInt: exact for any safe integer.
    if (micros === 0) return "0.000000";
    const abs = Math.abs(micros);
    const whole = Math.floor(abs / 1_000_000);
    const fraction = String(abs - whole * 1_000_000 + 1_000_000).slice(1);
    return `${micros < 0 ? "-" : ""}${whole}.${fraction}`;
  }
  const negative = micros < 0n;
  const abs = negative ? -micros : micros;
  const whole = abs / 1_000_000n;
  const fraction = (abs % 1_000_000n).toString().padStart(6, "0");
  return `${negative ? "-" : ""}${whole}.${fraction}`;
}
