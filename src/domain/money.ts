// Money is a bigint of micro-units (1/1,000,000) from the database to the edge. These are the only
// two conversions: a decimal string with at most 6 decimals in, exactly 6 decimals out.

const DECIMAL = /^(0|[1-9]\d{0,17})(?:\.(\d{1,6}))?$/;

/** "0.0125" -> 12500n. Undefined for anything that is not a non-negative decimal with <= 6 decimals. */
export function parseMicros(text: string): bigint | undefined {
  const match = DECIMAL.exec(text);
  if (!match) return undefined;
  return BigInt(match[1]!) * 1_000_000n + BigInt((match[2] ?? "").padEnd(6, "0"));
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
