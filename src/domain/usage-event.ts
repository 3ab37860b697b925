// A usage event's rules, shared by the ingestion RPC and the NDJSON import; errors name the event and the field.
import { invalidParameter } from "./errors.js";
import { parseMicros, parseShortMicros } from "./money.js";
import { characters, textProblem } from "./text-rules.js";

export const MODEL_TYPES = ["Chat", "CUE"] as const;
export const MODEL_SOURCES = ["Builtin", "Custom"] as const;

/**
 * Per-event ceilings, far above any real event (10^12 tokens; 1,000,000.000000 per amount): a member's running total for a model
 * reaches the API's uint64 (1.8 * 10^19) only after millions of events at the ceiling; an ingestion that would pass it is refused.
 */
export const MAX_EVENT_TOKENS = 10n ** 12n;
export const MAX_EVENT_MICROS = 10n ** 12n;

/** An event's token count or micro-amount: a number from checkUsageEvent (at most 10^12), or a bigint from tests, up to the store's 2^63 - 1. */
export type EventValue = number | bigint;

export interface ModelIdentity {
  model_name: string;
  model_type: string;
  model_source: string;
}

/** A model's identity as one string, for maps: the three fields joined by NUL. */
export const modelKey = (modelName: string, modelType: string, modelSource: string) => `${modelName}\u0000${modelType}\u0000${modelSource}`;

/** The identity of a modelKey. Split at its last two NULs: only model_name may hold one (the other two are fixed words). */
export function modelOfKey(key: string): ModelIdentity {
  const afterName = key.lastIndexOf("\u0000", key.lastIndexOf("\u0000") - 1);
  const [model_type, model_source] = key.slice(afterName + 1).split("\u0000") as [string, string];
  return { model_name: key.slice(0, afterName), model_type, model_source };
}

export interface UsageEventInput {
  eventId: string;
  userId: string;
  modelName: string;
  modelType: string;
  modelSource: string;
  timestamp: number;
  inputTokens: EventValue;
  outputTokens: EventValue;
  basicMicros: EventValue;
  payGoMicros: EventValue;
}

const FIELDS = ["event_id", "user_id", "model_name", "model_type", "model_source", "timestamp",
  "input_tokens", "output_tokens", "basic_amount", "pay_go_amount"] as const;
const KNOWN_FIELDS = new Set<string>(FIELDS);
/** The event's fields as they arrive, before checking (JSON values or proto fields). */
export type RawUsageEvent = { [field in (typeof FIELDS)[number]]?: unknown };

const MAX_TOKENS = Number(MAX_EVENT_TOKENS);
const MAX_MICROS = Number(MAX_EVENT_MICROS);
/** The last second an event may have: 9999-12-31T23:59:59Z. */
export const MAX_TIMESTAMP = 253402300799;

/**
 * Checks one event; `where` names it in errors, e.g. `line 12`: `line 12 (event_id "e-9"): input_tokens: must be >= 0 (got -1)`.
 * Runs for every line of a 10-million-line import, so error text is built only on an error.
 */
export function checkUsageEvent(raw: RawUsageEvent, where: string): UsageEventInput {
  const eventId = text(raw.event_id, "event_id", where, undefined, 128, false);
  for (const key in raw) if (!KNOWN_FIELDS.has(key)) throw invalidParameter(`${eventLabel(where, eventId)}: ${key}: unknown field`);
  const userId = text(raw.user_id, "user_id", where, eventId, 128, true);
  const modelName = text(raw.model_name, "model_name", where, eventId, 128, false);
  const modelType = oneOf(raw.model_type, "model_type", where, eventId, MODEL_TYPES);
  const modelSource = oneOf(raw.model_source, "model_source", where, eventId, MODEL_SOURCES);
  const timestamp = integer(raw.timestamp, "timestamp", where, eventId, 1, MAX_TIMESTAMP, true, millisecondsHint);
  const inputTokens = integer(raw.input_tokens, "input_tokens", where, eventId, 0, MAX_TOKENS, false);
  const outputTokens = integer(raw.output_tokens, "output_tokens", where, eventId, 0, MAX_TOKENS, false);
  const basicMicros = amount(raw.basic_amount, "basic_amount", where, eventId);
  const payGoMicros = amount(raw.pay_go_amount, "pay_go_amount", where, eventId);
  if (modelSource === "Custom" && (basicMicros !== 0 || payGoMicros !== 0)) {
    const field = basicMicros !== 0 ? "basic_amount" : "pay_go_amount";
    throw invalidParameter(`${eventLabel(where, eventId)}: ${field}: a Custom model's amounts must be zero (only built-in models are charged)`);
  }
  return { eventId, userId, modelName, modelType, modelSource, timestamp, inputTokens, outputTokens, basicMicros, payGoMicros };
}

/** Where an event is, for an error: `line 12 (event_id "e-9")`, or `where` alone before its event_id is known. */
export const eventLabel = (where: string, eventId: string | undefined) => (eventId === undefined ? where : `${where} (event_id ${JSON.stringify(eventId)})`);

function text(value: unknown, field: string, where: string, eventId: string | undefined, maxLength: number, integerAllowed: boolean): string {
  if (typeof value === "string" && value.length > 0 && (value.length <= maxLength || characters(value) <= maxLength)) {
    const problem = textProblem(value);
    if (problem === undefined) return value;
    // The event id itself may be the broken text: name the event only by a sound id.
    throw invalidParameter(`${eventLabel(where, field === "event_id" ? undefined : eventId)}: ${field}: ${problem}`);
  }
  if (integerAllowed && typeof value === "number") {
    if (Number.isSafeInteger(value) && value >= 0) return String(value);
    // JSON has already rounded a number past 2^53 - 1: only a string keeps such an id exact.
    throw invalidParameter(`${eventLabel(where, eventId)}: ${field}: a number must be an integer from 0 to ${Number.MAX_SAFE_INTEGER} (2^53 - 1); send other ids as strings`);
  }
  if (typeof value !== "string" || value.length === 0) throw invalidParameter(`${eventLabel(where, eventId)}: ${field}: required, a non-empty string`);
  throw invalidParameter(`${eventLabel(where, eventId)}: ${field}: longer than ${maxLength} characters`);
}

function oneOf<T extends string>(value: unknown, field: string, where: string, eventId: string, allowed: readonly T[]): T {
  if (typeof value === "string" && (allowed as readonly string[]).includes(value)) return value as T;
  throw invalidParameter(`${eventLabel(where, eventId)}: ${field}: must be one of ${allowed.join(", ")} (got ${JSON.stringify(value ?? null)})`);
}

/**
 * The mistake behind most timestamps past 9999: milliseconds where Unix seconds are wanted. Said so, with the seconds it likely meant,
 * for counts of milliseconds from 2001 on (10^12); a smaller one, just past the limit, is no such mistake.
 */
function millisecondsHint(n: bigint): string | undefined {
  return n >= 10n ** 12n && n <= BigInt(MAX_TIMESTAMP) * 1000n ? `must be Unix seconds; ${n} looks like milliseconds (${n / 1000n} in seconds)` : undefined;
}

function integer(value: unknown, field: string, where: string, eventId: string, min: number, max: number, required: boolean,
  overMax?: (n: bigint) => string | undefined): number {
  // The common case: a JSON number in range.
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= min && value <= max && (value !== 0 || !required)) return value;
  if (value === undefined || value === null || (required && (value === 0n || value === 0))) {
    if (required) throw invalidParameter(`${eventLabel(where, eventId)}: ${field}: required`);
    return 0;
  }
  let n: bigint | undefined;
  if (typeof value === "number" && Number.isSafeInteger(value)) n = BigInt(value);
  else if (typeof value === "bigint") n = value;
  else if (typeof value === "string" && /^-?\d{1,20}$/.test(value)) n = BigInt(value);
  if (n === undefined) throw invalidParameter(`${eventLabel(where, eventId)}: ${field}: must be an integer (got ${JSON.stringify(typeof value === "bigint" ? String(value) : value)})`);
  if (n < BigInt(min)) throw invalidParameter(`${eventLabel(where, eventId)}: ${field}: must be >= ${min} (got ${n})`);
  if (n > BigInt(max)) throw invalidParameter(`${eventLabel(where, eventId)}: ${field}: ${overMax?.(n) ?? `must be <= ${max} (got ${n})`}`);
  return Number(n);
}

function amount(value: unknown, field: string, where: string, eventId: string): number {
  if (value === undefined || value === null || value === "") return 0;
  if (typeof value === "string") {
    const micros = parseShortMicros(value);
    if (micros !== undefined && micros <= MAX_MICROS) return micros;
  }
  const micros = typeof value === "string" ? parseMicros(value) : undefined;
  if (micros === undefined) {
    throw invalidParameter(`${eventLabel(where, eventId)}: ${field}: must be a decimal string >= 0 with at most 6 decimals (got ${JSON.stringify(value)})`);
  }
  if (micros > MAX_EVENT_MICROS) throw invalidParameter(`${eventLabel(where, eventId)}: ${field}: must be <= 1000000.000000 (got ${value})`);
  return Number(micros);
}

/** Answer order: model_name, model_type, model_source, each in code point order. */
export function compareModels(x: ModelIdentity, y: ModelIdentity): number {
  return compareCodePoints(x.model_name, y.model_name) || compareCodePoints(x.model_type, y.model_type)
    || compareCodePoints(x.model_source, y.model_source);
}

/** Orders strings by code point, the same on every database; JS `<` (UTF-16 units) differs where a surrogate meets U+E000 to U+FFFF. */
export function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const xSurrogate = x >= 0xd800 && x <= 0xdfff;
    const ySurrogate = y >= 0xd800 && y <= 0xdfff;
    if (xSurrogate !== ySurrogate) return xSurrogate ? 1 : -1;
    return x - y;
  }
  return a.length - b.length;
}
