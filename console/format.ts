// How figures are shown: amounts exactly as the API sends them (6-decimal strings) with the
// enterprise's currency; counts with digit grouping (a 64-bit count past 2^53 arrives as a string).
import { parseMicros } from "../src/domain/money.js";

const counts = new Intl.NumberFormat("en");

/** A count with its digits grouped; one past 2^53 (its digits, a string) through a bigint, never a float. */
export function count(value: number | string): string {
  return counts.format(typeof value === "number" ? value : BigInt(value));
}

export function money(amount: string, currency: string): string {
  return `${amount} ${currency}`;
}

/** Orders amount strings, largest first, exactly (micro-units as bigint, never a float). */
export function byAmountDesc(a: string, b: string): number {
  const x = parseMicros(a) ?? 0n;
  const y = parseMicros(b) ?? 0n;
  return x === y ? 0 : x > y ? -1 : 1;
}

/** An amount as a number for drawing only: a chart's pixel does not need the sixth decimal. */
export function plotAmount(amount: string): number {
  return Number(amount);
}
