// A usage event's rules, shared by the ingestion RPC and the NDJSON import: the field types, the
// spec's words for model_type and model_source, non-negative token counts, amounts with at most 6
// decimals, and zero amounts for a Custom model. Errors name the event and the field.
import { invalidParameter } from "./errors.js";
import { parseMicros } from "./money.js";

export const MODEL_TYPES = ["Chat", "CUE"] as const;
export const MODEL_SOURCES = ["Builtin", "Custom"] as const;

/**
 * Per-event ceilings, far above any real event (10^12 tokens; 1,000,000.000000 per amount), so that a
 * sum reaches the signed 64-bit limit of the store's columns (9.2 * 10^18) only after millions of
 * events at the ceiling. An ingestion that would pass it is refused (see usage-repository.ts).
 */
export const MAX_EVENT_TOKENS = 10n ** 12n;
export const MAX_EVENT_MICROS = 10n ** 12n;

export interface UsageEventInput {
  eventId: string;
  userId: string;
  modelName: string;
  modelType: string;
  modelSource: string;
  timestamp: number;
  inputTokens: bigint;
  outputTokens: bigint;
  basicMicros: bigint;
  payGoMicros: bigint;
}

/** The event's fields as they arrive, before checking (JSON values or proto fields). */
export interface RawUsageEvent {
  event_id?: unknown;
  user_id?: unknown;
  model_name?: unknown;
  model_type?: unknown;
  model_source?: unknown;
  timestamp?: unknown;
  input_tokens?: unknown;
  output_tokens?: unknown;
  basic_amount?: unknown;
  pay_go_amount?: unknown;
}

const KNOWN_FIELDS = new Set(["event_id", "user_id", "model_name", "model_type", "model_source", "timestamp",
  "input_tokens", "output_tokens", "basic_amount", "pay_go_amount"]);

/** Checks one event; `where` names it in errors, e.g. `line 12 (event_id "e-9")`. */
export function checkUsageEvent(raw: RawUsageEvent, where: string): UsageEventInput {
  const eventId = text(raw.event_id, "event_id", where, 128, false);
  const at = `${where} (event_id ${JSON.stringify(eventId)})`;
  for (const key of Object.keys(raw)) {
    if (!KNOWN_FIELDS.has(key)) throw invalidParameter(`${at}: ${key}: unknown field`);
  }
  const userId = text(raw.user_id, "user_id", at, 128, true);
  const modelName = text(raw.model_name, "model_name", at, 128, false);
  const modelType = oneOf(raw.model_type, "model_type", at, MODEL_TYPES);
  const modelSource = oneOf(raw.model_source, "model_source", at, MODEL_SOURCES);
  const timestamp = integer(raw.timestamp, "timestamp", at, 1n, 253402300799n, true);
  const inputTokens = integer(raw.input_tokens, "input_tokens", at, 0n, MAX_EVENT_TOKENS, false);
  const outputTokens = integer(raw.output_tokens, "output_tokens", at, 0n, MAX_EVENT_TOKENS, false);
  const basicMicros = amount(raw.basic_amount, "basic_amount", at);
  const payGoMicros = amount(raw.pay_go_amount, "pay_go_amount", at);
  if (modelSource === "Custom" && (basicMicros !== 0n || payGoMicros !== 0n)) {
    const field = basicMicros !== 0n ? "basic_amount" : "pay_go_amount";
    throw invalidParameter(`${at}: ${field}: a Custom model's amounts must be zero (only built-in models are charged)`);
  }
  return { eventId, userId, modelName, modelType, modelSource, timestamp: Number(timestamp), inputTokens, outputTokens, basicMicros, payGoMicros };
}

function text(value: unknown, field: string, at: string, maxLength: number, integerAllowed: boolean): string {
  if (integerAllowed && typeof value === "number" && Number.isSafeInteger(value) && value >= 0) return String(value);
  if (typeof value !== "string" || value.length === 0) throw invalidParameter(`${at}: ${field}: required, a non-empty string`);
  if (value.length > maxLength) throw invalidParameter(`${at}: ${field}: longer than ${maxLength} characters`);
  return value;
}

function oneOf<T extends string>(value: unknown, field: string, at: string, allowed: readonly T[]): T {
  if (typeof value === "string" && (allowed as readonly string[]).includes(value)) return value as T;
  throw invalidParameter(`${at}: ${field}: must be one of ${allowed.join(", ")} (got ${JSON.stringify(value ?? null)})`);
}

function integer(value: unknown, field: string, at: string, min: bigint, max: bigint, required: boolean): bigint {
  if (value === undefined || value === null || (required && (value === 0n || value === 0))) {
    if (required) throw invalidParameter(`${at}: ${field}: required`);
    return 0n;
  }
  let n: bigint | undefined;
  if (typeof value === "number" && Number.isSafeInteger(value)) n = BigInt(value);
  else if (typeof value === "bigint") n = value;
  else if (typeof value === "string" && /^-?\d{1,20}$/.test(value)) n = BigInt(value);
  if (n === undefined) throw invalidParameter(`${at}: ${field}: must be an integer (got ${JSON.stringify(typeof value === "bigint" ? String(value) : value)})`);
  if (n < min) throw invalidParameter(`${at}: ${field}: must be >= ${min} (got ${n})`);
  if (n > max) throw invalidParameter(`${at}: ${field}: must be <= ${max} (got ${n})`);
  return n;
}

function amount(value: unknown, field: string, at: string): bigint {
  if (value === undefined || value === null || value === "") return 0n;
  const micros = typeof value === "string" ? parseMicros(value) : undefined;
  if (micros === undefined) {
    throw invalidParameter(`${at}: ${field}: must be a decimal string >= 0 with at most 6 decimals (got ${JSON.stringify(value)})`);
  }
  if (micros > MAX_EVENT_MICROS) throw invalidParameter(`${at}: ${field}: must be <= 1000000.000000 (got ${value})`);
  return micros;
}

/**
 * Orders strings by code point, the same on every database. JS `<` compares UTF-16 units, which
 * differs only where a surrogate (a code point above U+FFFF) meets a unit from U+E000 to U+FFFF.
 */
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
