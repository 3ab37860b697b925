// JSON text read exactly, with its shape checked before any recursive walk:
// - nesting deeper than MAX_JSON_DEPTH is refused (a deep body must not exhaust the stack later);
// - a key given twice in one object is refused (JSON.parse would silently keep the second);
// - 64-bit integers stay exact. JSON.parse turns 9007199254740993 into ...992, so integer literals
//   longer than 15 digits are read as marked strings: U+0000 then the digits. A caller's own string
//   value that starts with U+0000 gets one more U+0000 in front, so it never reads as a marked number
//   (and is refused later anyway: no string may hold U+0000). Keys and other strings stay as sent, so
//   messages quote them as the caller wrote them.
// One linear scan does all three; the text is parsed by JSON.parse, rewritten only when needed.
import { invalidParameter } from "./errors.js";

export const MAX_JSON_DEPTH = 64;

const MARKED_LONG_INTEGER = /^\u0000-?\d{16,}$/;

/** The digits of a long integer literal read by parseJsonExact, or undefined for anything else. */
export function longIntegerDigits(value: unknown): string | undefined {
  return typeof value === "string" && value.charCodeAt(0) === 0 && MARKED_LONG_INTEGER.test(value) ? value.slice(1) : undefined;
}

interface Container {
  isObject: boolean;
  /** Keys seen so far (objects only). */
  keys: Set<string> | undefined;
  /** Objects: the next string is a key. */
  expectKey: boolean;
  /** The key or array index of the value being read, for error paths. */
  lastKey: string;
  index: number;
}

const QUOTE = 34;
const BACKSLASH = 92;

/**
 * Parses JSON text as described above. Syntax errors are JSON.parse's (the caller describes them);
 * the shape errors are 4001s naming the limit (`whole` names the text) or the key. Without
 * `markLongIntegers`, numbers and strings are JSON.parse's (a file of no 64-bit fields).
 */
export function parseJsonExact(text: string, whole = "body", markLongIntegers = true): unknown {
  const open: Container[] = [];
  let rewritten = "";
  let copied = 0;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      const top = open[open.length - 1];
      const isKey = top?.isObject === true && top.expectKey;
      if (isKey) {
        const key = keyText(text, i, end);
        top.keys ??= new Set();
        if (top.keys.has(key)) throw invalidParameter(`${pathOf(open, key)}: given twice; send it once`);
        top.keys.add(key);
        top.lastKey = key;
        top.expectKey = false;
      }
      if (markLongIntegers && !isKey && text.startsWith("\\u0000", i + 1)) {
        rewritten += text.slice(copied, i + 1) + "\\u0000";
        copied = i + 1;
      }
      i = end;
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (open.length === MAX_JSON_DEPTH) throw invalidParameter(`${whole}: JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
      open.push({ isObject: c === 123, keys: undefined, expectKey: c === 123, lastKey: "", index: 0 });
      i++;
    } else if (c === 125 /* } */ || c === 93 /* ] */) {
      open.pop();
      i++;
    } else if (c === 44 /* , */) {
      const top = open[open.length - 1];
      if (top?.isObject) top.expectKey = true;
      else if (top) top.index++;
      i++;
    } else if (c === 45 /* - */ || (c >= 48 && c <= 57)) {
      let j = i + 1;
      while (j < text.length && isNumberChar(text.charCodeAt(j))) j++;
      if (markLongIntegers && j - i >= 16 && /^-?\d{16,}$/.test(text.slice(i, j))) {
        rewritten += `${text.slice(copied, i)}"\\u0000${text.slice(i, j)}"`;
        copied = j;
      }
      i = j;
    } else {
      i++;
    }
  }
  return JSON.parse(copied === 0 ? text : rewritten + text.slice(copied));
}

/** The index just past the closing quote of the string starting at `start` (or the text's end). */
function stringEnd(text: string, start: number): number {
  let j = start + 1;
  for (;;) {
    const quote = text.indexOf('"', j);
    if (quote < 0) return text.length;
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    j = quote + 1;
  }
}

function keyText(text: string, start: number, end: number): string {
  const raw = text.slice(start + 1, end - 1);
  if (!raw.includes("\\")) return raw;
  try {
    return JSON.parse(text.slice(start, end)) as string;
  } catch {
    return raw; // a broken escape: JSON.parse reports it with its place
  }
}

const isNumberChar = (c: number) => (c >= 48 && c <= 57) || c === 46 || c === 101 || c === 69 || c === 43 || c === 45;

function pathOf(open: Container[], key: string): string {
  let path = "";
  for (let k = 0; k < open.length - 1; k++) {
    const container = open[k]!;
    path += container.isObject ? `${path === "" ? "" : "."}${container.lastKey}` : `[${container.index}]`;
  }
  return path === "" ? key : `${path}.${key}`;
}
