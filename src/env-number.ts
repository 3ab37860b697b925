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

export function envNumber(env: NodeJS.ProcessEnv, name: string, { fallback, min, max = Number.MAX_SAFE_INTEGER, fraction = false, note }: EnvNumberRule): number {
  const text = env[name];
  if (text === undefined || text.trim() === "") return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value < min || value > max || (!fraction && !Number.isInteger(value))) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
    throw new BadSetting(`${name}: "${text}" is not ${fraction ? "a number" : "a whole number"} ${range}${note ? ` ${note}` : ""}`);
  }
  return value;
}
