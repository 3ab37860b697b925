// JSON text with exact 64-bit integers. JSON.parse turns 9007199254740993 into ...992, so integer
// literals longer than 15 digits are read as marked strings: LONG_INTEGER_MARK then the digits. The
// mark (U+0000) cannot come from a caller's own string, which may not contain U+0000, so the reader
// tells a long number from a string and accepts it only where a number belongs.

const LONG_INTEGER = /\d{16,}/;

export const LONG_INTEGER_MARK = "\u0000";

/** The digits of a long integer literal read by parseJsonExact, or undefined for anything else. */
export function longIntegerDigits(value: unknown): string | undefined {
  return typeof value === "string" && value.charCodeAt(0) === 0 ? value.slice(1) : undefined;
}

export function parseJsonExact(text: string): unknown {
  if (!LONG_INTEGER.test(text)) return JSON.parse(text);
  return JSON.parse(quoteLongIntegers(text));
}

/** Wraps integer literals of 16 or more digits that stand outside strings in quotes. */
function quoteLongIntegers(text: string): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      let j = i + 1;
      while (j < text.length && text.charCodeAt(j) !== 34) j += text.charCodeAt(j) === 92 /* \ */ ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === 45 /* - */ || (c >= 48 && c <= 57)) {
      let j = i + 1;
      while (j < text.length && /[0-9.eE+-]/.test(text[j]!)) j++;
      const literal = text.slice(i, j);
      out += /^-?\d{16,}$/.test(literal) ? `"\\u0000${literal}"` : literal;
      i = j;
    } else {
      out += text[i];
      i++;
    }
  }
  return out;
}
