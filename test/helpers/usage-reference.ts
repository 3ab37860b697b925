// Independent reference pieces for the usage tests: an exact JSON reader (64-bit integers as bigint),
// code point order, 6-decimal formatting and a plain bigint sum of events over a window. Written apart
// from src/ on purpose, so a test never checks the server against its own helpers.

/**
 * JSON.parse, except that integer literals of 16 or more digits (outside strings) become bigint, so
 * 9007199254740993 stays exact. Shorter integers stay numbers.
 */
export function parseJsonBig(text: string): any {
  let out = "";
  let i = 0;
  const marker = "\u0000big:";
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === "-" || (c >= "0" && c <= "9")) {
      let j = i + 1;
      while (j < text.length && /[0-9.eE+-]/.test(text[j]!)) j++;
      const literal = text.slice(i, j);
      out += /^-?\d{16,}$/.test(literal) ? JSON.stringify(marker + literal) : literal;
      i = j;
    } else {
      out += c;
      i++;
    }
  }
  return JSON.parse(out, (_key, value) =>
    typeof value === "string" && value.startsWith(marker) ? BigInt(value.slice(marker.length)) : value);
}

/** How parseJsonBig gives back an integer: a number below 16 digits, else a bigint. */
export const jsonInt = (n: bigint): number | bigint => (n.toString().replace("-", "").length >= 16 ? n : Number(n));

/** Code point order (not UTF-16 unit order): "Zeta" < "acme", "\uFF5E" < "\u{1F600}". */
export function byCodePoint(a: string, b: string): number {
  const x = Array.from(a, (ch) => ch.codePointAt(0)!);
  const y = Array.from(b, (ch) => ch.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return x[i]! - y[i]!;
  }
  return x.length - y.length;
}

/** 300000n -> "0.300000". */
export function sixDecimals(micros: bigint): string {
  const whole = micros / 1_000_000n;
  const fraction = micros % 1_000_000n;
  return `${whole}.${fraction.toString().padStart(6, "0")}`;
}

export interface ReferenceEvent {
  event_id: string;
  user_id: string;
  model_name: string;
  model_type: "Chat" | "CUE";
  model_source: "Builtin" | "Custom";
  timestamp: number;
  input_tokens: bigint;
  output_tokens: bigint;
  basic_micros: bigint;
  pay_go_micros: bigint;
}

export interface ReferenceSum {
  user_id: string;
  model_name: string;
  model_type: string;
  model_source: string;
  input_tokens: bigint;
  output_tokens: bigint;
  basic_micros: bigint;
  pay_go_micros: bigint;
}

/** The events that count, once each: the first one sent with each event_id wins. */
export function firstOfEachId(sent: readonly ReferenceEvent[]): ReferenceEvent[] {
  const seen = new Set<string>();
  return sent.filter((e) => (seen.has(e.event_id) ? false : (seen.add(e.event_id), true)));
}

/**
 * Sums per (user, model) of the events with start <= timestamp < end, sorted by user, then model
 * (code point order). A group exists when at least one event falls in the window.
 */
export function referenceSums(events: readonly ReferenceEvent[], start: number, end: number): ReferenceSum[] {
  const groups = new Map<string, ReferenceSum>();
  for (const e of events) {
    if (e.timestamp < start || e.timestamp >= end) continue;
    const key = JSON.stringify([e.user_id, e.model_name, e.model_type, e.model_source]);
    let g = groups.get(key);
    if (!g) {
      g = { user_id: e.user_id, model_name: e.model_name, model_type: e.model_type, model_source: e.model_source,
        input_tokens: 0n, output_tokens: 0n, basic_micros: 0n, pay_go_micros: 0n };
      groups.set(key, g);
    }
    g.input_tokens += e.input_tokens;
    g.output_tokens += e.output_tokens;
    g.basic_micros += e.basic_micros;
    g.pay_go_micros += e.pay_go_micros;
  }
  return [...groups.values()].sort((a, b) => byCodePoint(a.user_id, b.user_id) || byCodePoint(a.model_name, b.model_name)
    || byCodePoint(a.model_type, b.model_type) || byCodePoint(a.model_source, b.model_source));
}

/** The REST model_usage entry a reference sum must come back as (Custom models are never charged). */
export function expectedModelUsage(sum: ReferenceSum, currency: string) {
  const charged = sum.model_source !== "Custom";
  const basic = charged ? sum.basic_micros : 0n;
  const payGo = charged ? sum.pay_go_micros : 0n;
  return {
    model_name: sum.model_name,
    model_type: sum.model_type,
    model_source: sum.model_source,
    usage: { input_tokens: jsonInt(sum.input_tokens), output_tokens: jsonInt(sum.output_tokens) },
    amount: { basic_amount: sixDecimals(basic), pay_go_amount: sixDecimals(payGo), total_amount: sixDecimals(basic + payGo), currency },
  };
}
