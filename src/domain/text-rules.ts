// What every string a caller sends must be: text that every database stores and returns unchanged.
// PostgreSQL text cannot hold U+0000, and a lone surrogate (from a JSON "\ud800" escape, or an invalid
// UTF-8 byte kept by the body decoder) has no UTF-8 form: the store would keep U+FFFD instead.

// String.prototype.isWellFormed (ES2024) is native in Node 20; the compiler's lib is ES2023.
const isWellFormed = (String.prototype as unknown as { isWellFormed: (this: string) => boolean }).isWellFormed;

/** Why `text` cannot be stored as sent, or undefined when it can. */
export function textProblem(text: string): string | undefined {
  if (text.includes("\u0000")) return "must not contain the NUL character (U+0000)";
  if (!isWellFormed.call(text)) return "not valid Unicode text (a lone surrogate or invalid UTF-8)";
  return undefined;
}

const HIDDEN_IN_NAMES = /(?![\u200C\u200D\uFE00-\uFE0F\u{E0100}-\u{E01EF}])[\p{Bidi_Control}\p{Default_Ignorable_Code_Point}\p{Zl}\p{Zp}]/u;

/**
 * Why `name` (a name people read and tell apart) is refused: control characters, characters that hide in it (an invisible space or
 * hyphen, a Hangul filler, a text-direction mark or override that shows it in another order, a line break), or white space at either
 * end; undefined when fine. Joiners (U+200C, U+200D) and variation selectors stay: scripts and emoji need them.
 */
export function nameProblem(name: string): string | undefined {
  if (/\p{Cc}/u.test(name)) return "must not contain control characters (U+0000 to U+001F, U+007F to U+009F)";
  if (HIDDEN_IN_NAMES.test(name)) return "must not contain invisible or text-direction characters (Unicode's default-ignorable and bidi-control ones, line and paragraph separators; U+200C, U+200D and variation selectors may)";
  if (name.trim() !== name) return "must not begin or end with white space";
  return undefined;
}

/**
 * A department name as keyword search compares it (name_folded), and a keyword: lower case, with the final sigma ς as σ. toLowerCase
 * writes ς at a word's end and σ elsewhere, so without it "ΟΔΟΣ" would not contain "Σ".
 */
export const foldName = (text: string): string => text.toLowerCase().replaceAll("ς", "σ");

/** Its length in characters (code points), as the proto's length rules count: an emoji is one, not two UTF-16 units. */
export const characters = (text: string) => [...text].length;

/** The most characters of a caller's method or path that an answer or a log line repeats: HTTP/2 lets one be tens of KB. */
export const SHOWN_CHARACTERS = 512;

/** `text` as an answer or a log line repeats it: past SHOWN_CHARACTERS cut, saying how long it was. */
export function shown(text: string | undefined): string | undefined {
  if (text === undefined || text.length <= SHOWN_CHARACTERS) return text;
  const points = [...text];
  return points.length <= SHOWN_CHARACTERS ? text : `${points.slice(0, SHOWN_CHARACTERS).join("")}… (${points.length} characters)`;
}
