// A number setting from the environment, read the same way everywhere: unset or empty means the
// default; anything else must be a number (a whole one unless `fraction`) in range, or the start (or
// the command) stops with a message naming the variable and the range.
/** A setting (an environment variable or an option) the start or the command cannot take: the CLI's exit code 2, as any bad input. */
export class BadSetting extends Error {
  override name = "BadSetting";
}

export interface EnvNumberRule {
  fallback: number;
  min: number;
  max?: number;
  /** Allows a fraction (e.g. 0.5 calls a second). */
  fraction?: boolean;
  /** Appended to the message, e.g. "(0 turns the limit off)". */
  note?: string;
}

const DIGITS = /^-?\d+$/;
const DECIMAL = /^-?(\d+(\.\d*)?|\.\d+)$/;

export function envNumber(env: NodeJS.ProcessEnv, name: string, { fallback, min, max = Number.MAX_SAFE_INTEGER, fraction = false, note }: EnvNumberRule): number {
  const text = env[name];
  if (text === undefined || text.trim() === "") return fallback;
  // Decimal digits alone (a fraction's point if allowed): Number() would also take 0x10, 1e3 and +5.
  const value = (fraction ? DECIMAL : DIGITS).test(text.trim()) ? Number(text) : NaN;
  if (!Number.isFinite(value) || value < min || value > max || (!fraction && !Number.isInteger(value))) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
    throw new BadSetting(`${name}: "${text}" is not ${fraction ? "a number" : "a whole number"} ${range}${note ? ` ${note}` : ""}`);
  }
  return value;
}
