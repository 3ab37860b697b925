// JSON Schemas (2020-12, the OpenAPI 3.1 dialect) of proto messages as the REST facade reads and
// writes them (rest-json.ts): proto field names; 64-bit integers as exact JSON numbers out, a number or
// a numeric string in; enums by name; every field present in a response; unknown request fields
// refused. A request schema also carries the field's buf.validate rules that JSON Schema can say.
import { getOption, isFieldSet, ScalarType, type DescEnum, type DescField, type DescMessage, type Message } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import { field as fieldRules, file_buf_validate_validate, type FieldRules } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import type { ProtoComments } from "./proto-comments.js";
import { acceptsInteger } from "./rest-json.js";

export type JsonSchema = Record<string, unknown>;

/** "in": a request (what a caller sends); "out": a response (what the server writes). */
export type Direction = "in" | "out";

const INTEGER_TEXT = "^-?(0|[1-9][0-9]*)$";

/** Collects the message schemas a document refers to, named for `#/components/schemas/`. */
export class MessageSchemas {
  private readonly schemas = new Map<string, JsonSchema>();
  private readonly owners = new Map<string, DescMessage>();

  constructor(private readonly comments: ProtoComments) {}

  /** A `$ref` to the message's schema, adding it (and the messages it holds) to the components. */
  ref(message: DescMessage, direction: Direction): JsonSchema {
    const wellKnown = wellKnownSchema(message);
    if (wellKnown) return wellKnown;
    const name = componentName(message, direction);
    const owner = this.owners.get(name);
    if (owner && owner !== message) throw new Error(`two messages would share the schema name ${name}: ${owner.typeName}, ${message.typeName}`);
    if (!owner) {
      this.owners.set(name, message);
      this.schemas.set(name, {}); // placeholder first: a message may hold itself
      this.schemas.set(name, this.object(message, direction));
    }
    return { $ref: `#/components/schemas/${name}` };
  }

  /** The message as an object schema, inline, without the fields named in `omit` (bound elsewhere, e.g. the path). */
  object(message: DescMessage, direction: Direction, omit: readonly DescField[] = []): JsonSchema {
    const properties: Record<string, JsonSchema> = {};
    const required: string[] = [];
    for (const field of message.fields) {
      if (omit.includes(field)) continue;
      properties[field.name] = this.field(field, direction);
      if (direction === "out" ? !field.oneof : isRequiredIn(field)) required.push(field.name);
    }
    return withDescription({
      type: "object",
      properties,
      ...(required.length > 0 ? { required } : {}),
      additionalProperties: false,
    }, this.comments.of(message));
  }

  /** Components, sorted by name. */
  components(): Record<string, JsonSchema> {
    return Object.fromEntries([...this.schemas].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }

  /** A field's schema as a path or query parameter: the plain scalar (or a list of them), with its rules. */
  parameter(field: DescField): JsonSchema {
    const item = (scalar: ScalarType) => scalarSchema(scalar, "out");
    if (field.fieldKind === "scalar") return applyRules(item(field.scalar), getOption(field, fieldRules));
    if (field.fieldKind === "list" && field.listKind === "scalar") {
      return applyRules({ type: "array", items: item(field.scalar) }, getOption(field, fieldRules));
    }
    throw new Error(`${field.parent.typeName}.${field.name} cannot be a parameter`);
  }

  private field(field: DescField, direction: Direction): JsonSchema {
    let schema: JsonSchema;
    const asString = direction === "in" && acceptsInteger(field);
    switch (field.fieldKind) {
      case "scalar":
        schema = scalarSchema(field.scalar, direction, asString);
        if (direction === "out" && field.presence === FeatureSet_FieldPresence.EXPLICIT) schema = nullable(schema);
        break;
      case "enum":
        schema = enumSchema(field.enum, direction);
        break;
      case "message":
        // The writer prints an unset message field as null.
        schema = direction === "out" ? nullable(this.ref(field.message, direction)) : this.ref(field.message, direction);
        break;
      case "list":
        schema = {
          type: "array",
          items: field.listKind === "scalar" ? scalarSchema(field.scalar, direction, asString)
            : field.listKind === "enum" ? enumSchema(field.enum, direction)
            : this.ref(field.message, direction),
        };
        break;
      case "map":
        schema = {
          type: "object",
          additionalProperties: field.mapKind === "scalar" ? scalarSchema(field.scalar, direction)
            : field.mapKind === "enum" ? enumSchema(field.enum, direction)
            : this.ref(field.message, direction),
        };
        break;
    }
    if (direction === "in") schema = applyRules(schema, getOption(field, fieldRules));
    return withDescription(schema, this.comments.of(field));
  }
}

/** Output names are the message's; a request-side schema of a message that is not a request gets "Input". */
function componentName(message: DescMessage, direction: Direction): string {
  const name = message.typeName.slice(message.file.proto.package.length + 1);
  return direction === "out" || name.endsWith("Request") ? name : `${name}Input`;
}

function scalarSchema(scalar: ScalarType, direction: Direction, integerAsString = false): JsonSchema {
  switch (scalar) {
    case ScalarType.STRING:
      return integerAsString ? { anyOf: [{ type: "string" }, { type: "integer" }] } : { type: "string" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
    case ScalarType.DOUBLE:
      return { type: "number", format: "double" };
    case ScalarType.FLOAT:
      return { type: "number", format: "float" };
    case ScalarType.INT32: case ScalarType.SINT32: case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32: case ScalarType.FIXED32:
      return { type: "integer", format: "int32", minimum: 0 };
    case ScalarType.INT64: case ScalarType.SINT64: case ScalarType.SFIXED64:
    case ScalarType.UINT64: case ScalarType.FIXED64: {
      const unsigned = scalar === ScalarType.UINT64 || scalar === ScalarType.FIXED64;
      const number = { type: "integer", format: "int64", ...(unsigned ? { minimum: 0 } : {}) };
      // Written as an exact JSON number; read from a number or a numeric string (a client whose
      // numbers are doubles can send all 64 bits as text).
      return direction === "out" ? number : { anyOf: [number, { type: "string", pattern: unsigned ? "^(0|[1-9][0-9]*)$" : INTEGER_TEXT }] };
    }
  }
}

function enumSchema(desc: DescEnum, direction: Direction): JsonSchema {
  const names = { type: "string", enum: desc.values.map((v) => v.name) };
  return direction === "out" ? names : { anyOf: [names, { type: "integer", enum: desc.values.map((v) => v.number) }] };
}

/** A schema that also allows null; a lone `$ref` stays a `$ref` inside anyOf. */
const nullable = (schema: JsonSchema): JsonSchema =>
  typeof schema.type === "string" && Object.keys(schema).length === 1 ? { type: [schema.type, "null"] } : { anyOf: [schema, { type: "null" }] };

const withDescription = (schema: JsonSchema, description: string): JsonSchema => (description ? { ...schema, description } : schema);

/** Google's JSON mapping of the well-known types the API uses. */
function wellKnownSchema(message: DescMessage): JsonSchema | undefined {
  switch (message.typeName) {
    case "google.protobuf.Timestamp":
      return { type: "string", format: "date-time", description: "RFC 3339, UTC, e.g. \"2026-11-03T02:30:00Z\"." };
    case "google.protobuf.Duration":
      return { type: "string", pattern: "^-?[0-9]+(\\.[0-9]{1,9})?s$", description: "Seconds with an \"s\" suffix, e.g. \"1.5s\"." };
    case "google.protobuf.FieldMask":
      return { type: "string", description: "Field paths in lowerCamelCase, separated by commas." };
    case "google.protobuf.Struct":
      return { type: "object" };
    case "google.protobuf.Value":
      return {};
    case "google.protobuf.ListValue":
      return { type: "array" };
    case "google.protobuf.Empty":
      return { type: "object", additionalProperties: false };
  }
  if (message.typeName.startsWith("google.protobuf.")) throw new Error(`no JSON schema for ${message.typeName}`);
  return undefined;
}

// ---------- buf.validate rules ----------

type Bound = { case: string | undefined; value?: number | bigint };
interface NumberRules { const?: number | bigint; greaterThan?: Bound; lessThan?: Bound; in?: (number | bigint)[] }
interface StringRules { const?: string; len?: bigint; minLen?: bigint; maxLen?: bigint; pattern?: string; in?: string[] }
interface CountRules { minItems?: bigint; maxItems?: bigint; unique?: boolean; items?: FieldRules; minPairs?: bigint; maxPairs?: bigint; values?: FieldRules }

const ruleMessages = new Map(file_buf_validate_validate.messages.map((m) => [m.typeName, m]));

/**
 * The rules a field sets, by local name. The rule messages are proto2: an unset rule reads as its
 * default (a max_len of 0), so only the fields set count.
 */
function setRules<T>(rules: Message): T {
  const desc = ruleMessages.get(rules.$typeName)!;
  const out: Record<string, unknown> = {};
  for (const field of desc.fields) {
    if (field.oneof) {
      const group = (rules as unknown as Record<string, Bound>)[field.oneof.localName];
      if (group?.case === field.localName) out[field.oneof.localName] = group;
    } else if (isFieldSet(rules, field)) {
      const value = (rules as unknown as Record<string, unknown>)[field.localName];
      if (!Array.isArray(value) || value.length > 0) out[field.localName] = value;
    }
  }
  return out as T;
}

/**
 * Adds what JSON Schema can say of a field's rules: lengths, patterns, listed values, bounds, item
 * counts. Other rules (CEL, byte lengths) still hold; the server enforces every one.
 */
function applyRules(schema: JsonSchema, rules: FieldRules): JsonSchema {
  const rule = rules.type;
  switch (rule.case) {
    case undefined:
      return schema;
    case "string":
      return onBranch(schema, "string", stringKeywords(setRules(rule.value)));
    case "int32": case "int64": case "uint32": case "uint64": case "sint32": case "sint64":
    case "fixed32": case "fixed64": case "sfixed32": case "sfixed64": case "double": case "float":
      return onBranch(schema, schema.type === "number" ? "number" : "integer", numberKeywords(setRules(rule.value)));
    case "repeated": {
      const { minItems, maxItems, unique, items } = setRules<CountRules>(rule.value);
      return {
        ...schema,
        ...(minItems !== undefined ? { minItems: Number(minItems) } : {}),
        ...(maxItems !== undefined ? { maxItems: Number(maxItems) } : {}),
        ...(unique ? { uniqueItems: true } : {}),
        ...(items ? { items: applyRules(schema.items as JsonSchema, items) } : {}),
      };
    }
    case "map": {
      const { minPairs, maxPairs, values } = setRules<CountRules>(rule.value);
      return {
        ...schema,
        ...(minPairs !== undefined ? { minProperties: Number(minPairs) } : {}),
        ...(maxPairs !== undefined ? { maxProperties: Number(maxPairs) } : {}),
        ...(values ? { additionalProperties: applyRules(schema.additionalProperties as JsonSchema, values) } : {}),
      };
    }
    default:
      return schema;
  }
}

function stringKeywords(r: StringRules): JsonSchema {
  return {
    ...(r.const !== undefined ? { const: r.const } : {}),
    ...(r.len !== undefined ? { minLength: Number(r.len), maxLength: Number(r.len) } : {}),
    ...(r.minLen !== undefined ? { minLength: Number(r.minLen) } : {}),
    ...(r.maxLen !== undefined ? { maxLength: Number(r.maxLen) } : {}),
    ...(r.pattern !== undefined && ecmaPattern(r.pattern) ? { pattern: r.pattern } : {}),
    ...(r.in ? { enum: [...r.in] } : {}),
  };
}

function numberKeywords(r: NumberRules): JsonSchema {
  const low = r.greaterThan?.case === "gt" ? "exclusiveMinimum" : r.greaterThan?.case === "gte" ? "minimum" : undefined;
  const high = r.lessThan?.case === "lt" ? "exclusiveMaximum" : r.lessThan?.case === "lte" ? "maximum" : undefined;
  return {
    ...(r.const !== undefined ? { const: Number(r.const) } : {}),
    ...(low ? { [low]: Number(r.greaterThan!.value) } : {}),
    ...(high ? { [high]: Number(r.lessThan!.value) } : {}),
    ...(r.in ? { enum: r.in.map(Number) } : {}),
  };
}

/** The rule's RE2 pattern as JSON Schema's (ECMA-262, Unicode) regular expression, when it is one there too. */
function ecmaPattern(pattern: string): RegExp | undefined {
  try {
    return new RegExp(pattern, "u");
  } catch {
    return undefined; // RE2-only syntax, e.g. (?i): the server still enforces it
  }
}

/** Puts keywords on the schema, or on its branch of that type when it is an anyOf (a string or an integer). */
function onBranch(schema: JsonSchema, type: string, keywords: JsonSchema): JsonSchema {
  if (Object.keys(keywords).length === 0) return schema;
  if (!Array.isArray(schema.anyOf)) return { ...schema, ...keywords };
  return { ...schema, anyOf: (schema.anyOf as JsonSchema[]).map((branch) => (branch.type === type ? { ...branch, ...keywords } : branch)) };
}

/**
 * A request field the caller must send: one whose zero value breaks its rules (a field with explicit
 * presence is checked only when set).
 */
export function isRequiredIn(field: DescField): boolean {
  if (field.presence === FeatureSet_FieldPresence.EXPLICIT || field.oneof) return false;
  const rules = getOption(field, fieldRules);
  if (rules.required) return true;
  const rule = rules.type;
  switch (rule.case) {
    case "string": {
      const r = setRules<StringRules>(rule.value);
      return (r.minLen ?? 0n) > 0n || (r.len ?? 0n) > 0n || (r.in !== undefined && !r.in.includes(""))
        || (r.const !== undefined && r.const !== "") || (r.pattern !== undefined && ecmaPattern(r.pattern)?.test("") === false);
    }
    case "int32": case "int64": case "uint32": case "uint64": case "sint32": case "sint64":
    case "fixed32": case "fixed64": case "sfixed32": case "sfixed64": case "double": case "float": {
      const r = setRules<NumberRules>(rule.value);
      const low = r.greaterThan === undefined ? undefined : Number(r.greaterThan.value);
      const high = r.lessThan === undefined ? undefined : Number(r.lessThan.value);
      return (low !== undefined && (r.greaterThan!.case === "gt" ? low >= 0 : low > 0))
        || (high !== undefined && (r.lessThan!.case === "lt" ? high <= 0 : high < 0))
        || (r.in !== undefined && !r.in.map(Number).includes(0))
        || (r.const !== undefined && Number(r.const) !== 0);
    }
    case "repeated":
      return (setRules<CountRules>(rule.value).minItems ?? 0n) > 0n;
    case "map":
      return (setRules<CountRules>(rule.value).minPairs ?? 0n) > 0n;
    default:
      return false;
  }
}
