// Proto messages <-> the REST JSON of docs/api-rules.md: snake_case names, every field present with
// its zero value, 64-bit integers as exact JSON numbers (in: number or numeric string), unknown fields
// rejected with the field's path. Driven by the message descriptors; knows no service.
import { setImmediate as setImmediatePromise } from "node:timers/promises";
import { create, fromJson, toJson, ScalarType, type DescEnum, type DescField, type DescMessage, type JsonValue, type Message } from "@bufbuild/protobuf";
import { getOption } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import { rest_integer_as_string } from "../../gen/enterprise_admin/v1/options_pb.js";
import { invalidParameter } from "../domain/errors.js";
import { longIntegerDigits } from "../domain/exact-json.js";
import { shown } from "../domain/text-rules.js";

type Fields = Record<string, unknown>;

// ---------- reading ----------

const fieldIndex = new WeakMap<DescMessage, Map<string, DescField>>();

function fieldsByJsonKey(schema: DescMessage): Map<string, DescField> {
  let index = fieldIndex.get(schema);
  if (!index) {
    index = new Map();
    for (const field of schema.fields) {
      index.set(field.name, field);
      index.set(field.jsonName, field);
    }
    fieldIndex.set(schema, index);
  }
  return index;
}

export function findField(schema: DescMessage, key: string): DescField | undefined {
  return fieldsByJsonKey(schema).get(key);
}

/** Reads a JSON object into a message of `schema`; errors name the field path. */
export function messageFromRestJson<Desc extends DescMessage>(schema: Desc, json: unknown, path = ""): Message & Fields {
  if (isWellKnown(schema)) return fromWellKnown(schema, json, path) as Message & Fields;
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    throw invalidParameter(`${path || "body"}: expected a JSON object`);
  }
  const init: Fields = {};
  const sentAs = new Map<DescField, string>();
  for (const [key, value] of Object.entries(json)) {
    const field = findField(schema, key);
    const fieldPath = path ? `${path}.${key}` : key;
    if (!field) throw invalidParameter(`${fieldPath}: unknown field`);
    // proto JSON accepts both spellings of a name; both at once would silently keep the second.
    const other = sentAs.get(field);
    if (other !== undefined) throw invalidParameter(`${fieldPath}: the same field as ${other}; send it once`);
    sentAs.set(field, key);
    if (value === null) continue; // null means "not set" in proto JSON
    init[field.localName] = readField(field, value, fieldPath);
  }
  return create(schema, init as never) as Message & Fields;
}

function readField(field: DescField, value: unknown, path: string): unknown {
  switch (field.fieldKind) {
    case "scalar":
      return readScalar(field.scalar, value, path, acceptsInteger(field));
    case "enum":
      return readEnum(field.enum, value, path);
    case "message":
      return messageFromRestJson(field.message, value, path);
    case "list": {
      if (!Array.isArray(value)) throw invalidParameter(`${path}: expected an array`);
      return value.map((item, i) => {
        const itemPath = `${path}[${i}]`;
        if (item === null) throw invalidParameter(`${itemPath}: null is not allowed in a list`);
        if (field.listKind === "scalar") return readScalar(field.scalar, item, itemPath, acceptsInteger(field));
        if (field.listKind === "enum") return readEnum(field.enum, item, itemPath);
        return messageFromRestJson(field.message, item, itemPath);
      });
    }
    case "map": {
      if (typeof value !== "object" || Array.isArray(value)) throw invalidParameter(`${path}: expected a JSON object`);
      // Entries are built, not assigned: `out["__proto__"] = v` would set the prototype and drop the key.
      return Object.fromEntries(Object.entries(value as object).map(([key, item]) => {
        const itemPath = `${path}.${key}`;
        if (field.mapKind === "scalar") return [key, readScalar(field.scalar, item, itemPath, false)];
        if (field.mapKind === "enum") return [key, readEnum(field.enum, item, itemPath)];
        return [key, messageFromRestJson(field.message, item, itemPath)];
      }));
    }
  }
}

// getOption builds an extension container on every call (~8 µs); read each field's option once.
const integerAsString = new WeakMap<DescField, boolean>();
export const acceptsInteger = (field: DescField): boolean => {
  let value = integerAsString.get(field);
  if (value === undefined) {
    value = getOption(field, rest_integer_as_string);
    integerAsString.set(field, value);
  }
  return value;
};

const INT_TEXT = /^-?(0|[1-9]\d*)$/;

/** Reads one scalar; `path` names it in errors. Also used for path variables and query parameters. */
export function readScalar(type: ScalarType, given: unknown, path: string, integerAsString = false): unknown {
  const long = longIntegerDigits(given);
  const value = long ?? given;
  switch (type) {
    case ScalarType.STRING:
      if (long !== undefined && integerAsString) return long;
      if (typeof given === "string" && long === undefined) return given;
      if (integerAsString && typeof value === "number" && Number.isSafeInteger(value)) return String(value);
      throw invalidParameter(`${path}: expected a string${integerAsString ? " or an integer" : ""}`);
    case ScalarType.BOOL:
      if (typeof value === "boolean") return value;
      if (long !== undefined) throw invalidParameter(`${path}: expected true or false`);
      if (value === "true" || value === "false") return value === "true";
      throw invalidParameter(`${path}: expected true or false`);
    case ScalarType.INT32: case ScalarType.SINT32: case ScalarType.SFIXED32:
      return readInteger(value, path, -(2n ** 31n), 2n ** 31n - 1n, false);
    case ScalarType.UINT32: case ScalarType.FIXED32:
      return readInteger(value, path, 0n, 2n ** 32n - 1n, false);
    case ScalarType.INT64: case ScalarType.SINT64: case ScalarType.SFIXED64:
      return readInteger(value, path, -(2n ** 63n), 2n ** 63n - 1n, true);
    case ScalarType.UINT64: case ScalarType.FIXED64:
      return readInteger(value, path, 0n, 2n ** 64n - 1n, true);
    case ScalarType.DOUBLE: case ScalarType.FLOAT: {
      const n = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
      if (typeof n === "number" && Number.isFinite(n)) return n;
      throw invalidParameter(`${path}: expected a number`);
    }
    case ScalarType.BYTES:
      if (long === undefined && typeof value === "string" && /^[A-Za-z0-9+/_-]*={0,2}$/.test(value)) return new Uint8Array(Buffer.from(value, "base64"));
      throw invalidParameter(`${path}: expected base64 text`);
  }
}

function readInteger(value: unknown, path: string, min: bigint, max: bigint, wide: boolean): number | bigint {
  let n: bigint | undefined;
  if (typeof value === "number" && Number.isInteger(value)) n = BigInt(value);
  else if (typeof value === "string" && INT_TEXT.test(value)) {
    // No 64-bit value has more digits: a longer text (a megabyte of them, say) is neither converted nor echoed whole.
    if (value.length > MAX_INTEGER_TEXT) throw invalidParameter(`${path}: ${shown(value)} is out of range ${min} to ${max}`);
    n = BigInt(value);
  }
  if (n === undefined) throw invalidParameter(`${path}: expected an integer`);
  if (n < min || n > max) throw invalidParameter(`${path}: ${n} is out of range ${min} to ${max}`);
  return wide ? n : Number(n);
}

/** The longest decimal text of a 64-bit integer: 2^64 - 1's 20 digits, or a sign and 2^63's 19. */
const MAX_INTEGER_TEXT = 20;

function readEnum(desc: DescEnum, value: unknown, path: string): number {
  const byName = typeof value === "string" ? desc.values.find((v) => v.name === value) : undefined;
  if (byName) return byName.number;
  if (typeof value === "number" && desc.values.some((v) => v.number === value)) return value;
  throw invalidParameter(`${path}: expected one of ${desc.values.map((v) => v.name).join(", ")}`);
}

const isWellKnown = (schema: DescMessage) => schema.typeName.startsWith("google.protobuf.");

function fromWellKnown(schema: DescMessage, json: unknown, path: string): Message {
  try {
    return fromJson(schema, json as JsonValue);
  } catch (error) {
    const cause = error instanceof Error ? error.message : "invalid value";
    // A field mask's JSON form is not obvious (protobuf-es names a list by its JS type, "Array(1)"), so it is spelled out.
    if (schema.typeName === "google.protobuf.FieldMask") {
      throw invalidParameter(`${path}: ${cause}; a field mask is one string of lowerCamelCase field names separated by commas, e.g. "description,environmentVariables"`);
    }
    throw invalidParameter(`${path}: ${cause}`);
  }
}

// ---------- writing ----------

const hasPresence = (field: DescField) => field.presence === FeatureSet_FieldPresence.EXPLICIT;

/**
 * Prints a message (or its init shape: missing fields are zero values) as REST JSON with every field
 * present, 64-bit integers as exact numbers. `written`: the text of fields written already (messageToRestJsonInTurns).
 */
export function messageToRestJson(schema: DescMessage, value: Fields | undefined, written?: ReadonlyMap<DescField, string>): string {
  if (value === undefined || value === null) return "null";
  if (isPlain(schema)) return JSON.stringify(toPlain(schema, value));
  if (isWellKnown(schema)) return JSON.stringify(toJson(schema, create(schema, value as never)));
  let out = "{";
  let first = true;
  for (const field of schema.fields) {
    const v = value[field.localName];
    if (field.oneof && field.fieldKind !== "scalar" && v === undefined) continue;
    out += `${first ? "" : ","}"${field.name}":${written?.get(field) ?? writeField(field, v)}`; // a proto field name needs no escaping
    first = false;
  }
  return out + "}";
}

/**
 * As messageToRestJson, the same text, giving the event loop a turn whenever writing it has held the thread TURN_MS, between the items
 * of its lists of messages down to `depth` levels (a usage report's buckets and their groups): a 100,000-figure answer was most of a
 * second in one stretch, while the server answered nothing else. Only the REST answer of a unary call is written this way.
 */
export async function messageToRestJsonInTurns(schema: DescMessage, value: Fields | undefined, depth = 2,
  turn = { since: performance.now() }): Promise<string> {
  if (depth === 0 || value === undefined || value === null || isPlain(schema) || isWellKnown(schema)) return messageToRestJson(schema, value);
  // The fields holding messages are written here, in turns; messageToRestJson writes the rest around them.
  const written = new Map<DescField, string>();
  for (const field of schema.fields) {
    const v = value[field.localName];
    if (field.fieldKind === "message" && v !== undefined) written.set(field, await messageToRestJsonInTurns(field.message, v as Fields, depth - 1, turn));
    if (field.fieldKind !== "list" || field.listKind !== "message") continue;
    const parts: string[] = [];
    for (const item of (v as Fields[] | undefined) ?? []) {
      parts.push(await messageToRestJsonInTurns(field.message, item, depth - 1, turn));
      if (performance.now() - turn.since > TURN_MS) {
        await setImmediatePromise();
        turn.since = performance.now();
      }
    }
    written.set(field, `[${parts.join(",")}]`);
  }
  return messageToRestJson(schema, value, written);
}

/** How long writing an answer holds the thread before it gives the event loop a turn. */
const TURN_MS = 20;

function writeField(field: DescField, v: unknown): string {
  switch (field.fieldKind) {
    case "scalar":
      // A field with explicit presence (proto3 `optional`) that is not set prints as null.
      if (v === undefined && hasPresence(field)) return "null";
      return writeScalar(field.scalar, v ?? zero(field.scalar));
    case "enum":
      return writeEnum(field.enum, v as number | undefined);
    case "message":
      return messageToRestJson(field.message, v as Fields | undefined);
    case "list": {
      const items = (v as unknown[] | undefined) ?? [];
      const parts = items.map((item) =>
        field.listKind === "scalar" ? writeScalar(field.scalar, item)
          : field.listKind === "enum" ? writeEnum(field.enum, item as number)
          : messageToRestJson(field.message, item as Fields));
      return `[${parts.join(",")}]`;
    }
    case "map": {
      const entries = Object.entries((v as Record<string, unknown> | undefined) ?? {});
      const parts = entries.map(([key, item]) => `${JSON.stringify(key)}:${
        field.mapKind === "scalar" ? writeScalar(field.scalar, item)
          : field.mapKind === "enum" ? writeEnum(field.enum, item as number)
          : messageToRestJson(field.message, item as Fields)}`);
      return `{${parts.join(",")}}`;
    }
  }
}

function zero(type: ScalarType): unknown {
  if (type === ScalarType.STRING) return "";
  if (type === ScalarType.BOOL) return false;
  if (type === ScalarType.BYTES) return new Uint8Array(0);
  return 0;
}

function writeScalar(type: ScalarType, v: unknown): string {
  switch (type) {
    case ScalarType.STRING:
      return JSON.stringify(v);
    case ScalarType.BOOL:
      return v ? "true" : "false";
    case ScalarType.BYTES:
      return JSON.stringify(Buffer.from(v as Uint8Array).toString("base64"));
    case ScalarType.DOUBLE: case ScalarType.FLOAT:
      return Number.isFinite(v as number) ? String(v) : JSON.stringify(String(v));
    default:
      // Integers of every width: a bigint or string prints its exact digits.
      return String(v);
  }
}

function writeEnum(desc: DescEnum, v: number | undefined): string {
  return JSON.stringify(desc.value[v ?? 0]?.name ?? v ?? 0);
}

// ---------- fast path ----------
// A message whose fields (recursively) are only strings, bools, 32-bit integers, messages of the same
// kind and lists of these prints exactly as JSON.stringify prints a plain object with the proto field
// names in field order and zero values filled in: build that object and let the native
// JSON.stringify do the printing.

const plainSchemas = new WeakMap<DescMessage, boolean>();

function isPlain(schema: DescMessage, seen = new Set<DescMessage>()): boolean {
  const known = plainSchemas.get(schema);
  if (known !== undefined) return known;
  if (seen.has(schema)) return false; // a recursive message takes the general writer
  seen.add(schema);
  const plainScalar = (t: ScalarType) => t === ScalarType.STRING || t === ScalarType.BOOL || t === ScalarType.INT32
    || t === ScalarType.UINT32 || t === ScalarType.SINT32 || t === ScalarType.FIXED32 || t === ScalarType.SFIXED32;
  const result = !isWellKnown(schema) && schema.fields.every((f) => {
    if (f.oneof) return false;
    if (f.fieldKind === "scalar") return plainScalar(f.scalar);
    if (f.fieldKind === "message") return isPlain(f.message, seen);
    if (f.fieldKind === "list") return f.listKind === "scalar" ? plainScalar(f.scalar) : f.listKind === "message" && isPlain(f.message, seen);
    return false;
  });
  plainSchemas.set(schema, result);
  return result;
}

function toPlain(schema: DescMessage, value: Fields | undefined): unknown {
  if (value === undefined || value === null) return null;
  const out: Record<string, unknown> = {};
  for (const field of schema.fields) {
    const v = value[field.localName];
    switch (field.fieldKind) {
      case "scalar":
        out[field.name] = v ?? (hasPresence(field) ? null : zero(field.scalar));
        break;
      case "message":
        out[field.name] = toPlain(field.message, v as Fields | undefined);
        break;
      case "list": {
        const items = (v as unknown[] | undefined) ?? [];
        out[field.name] = field.listKind === "message" ? items.map((item) => toPlain(field.message, item as Fields)) : items;
        break;
      }
    }
  }
  return out;
}
