// Request validation from the proto's buf.validate rules, shared by every transport. The first
// violation becomes a 4001 whose message names the field path, e.g. "department_ids: value must ...".
import { ScalarType, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { pathToString } from "@bufbuild/protobuf/reflect";
import { createValidator } from "@bufbuild/protovalidate";
import { invalidParameter } from "../domain/errors.js";

const validator = createValidator();

export function validateRequest<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): void {
  rejectNulCharacters(schema, message as unknown as Record<string, unknown>);
  const result = validator.validate(schema, message);
  if (result.kind === "valid") return;
  if (result.kind === "invalid") {
    const messages = result.error.violations.map((v) => `${pathToString(v.field) || schema.name}: ${v.message}`);
    throw invalidParameter(messages.join("; "));
  }
  throw result.error;
}

/**
 * No string may hold U+0000: PostgreSQL text cannot store it, and no name, id or script needs it.
 * Checked here for every transport, so SQLite and PostgreSQL accept exactly the same input.
 */
function rejectNulCharacters(schema: DescMessage, message: Record<string, unknown>): void {
  const at = nulPath(schema, message);
  if (at !== undefined) throw invalidParameter(`${at}: must not contain the NUL character (U+0000)`);
}

/**
 * The path of the first string in `message` holding U+0000, if any. It is spelled out only when
 * one is found: a batch of 1,000 events has 10,000 strings.
 */
function nulPath(schema: DescMessage, message: Record<string, unknown>): string | undefined {
  const nul = (text: unknown) => typeof text === "string" && text.includes("\u0000");
  for (const field of schema.fields) {
    const value = message[field.localName];
    if (field.fieldKind === "scalar") {
      if (field.scalar === ScalarType.STRING && nul(value)) return field.name;
    } else if (field.fieldKind === "message") {
      const inner = value ? nulPath(field.message, value as Record<string, unknown>) : undefined;
      if (inner !== undefined) return `${field.name}.${inner}`;
    } else if (field.fieldKind === "list") {
      const items = value as unknown[];
      for (let i = 0; i < items.length; i++) {
        if (field.listKind === "message") {
          const inner = nulPath(field.message, items[i] as Record<string, unknown>);
          if (inner !== undefined) return `${field.name}[${i}].${inner}`;
        } else if (field.scalar === ScalarType.STRING && nul(items[i])) {
          return `${field.name}[${i}]`;
        }
      }
    } else if (field.fieldKind === "map") {
      for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
        if (nul(key)) return `${field.name} key`;
        if (field.mapKind === "scalar" && field.scalar === ScalarType.STRING && nul(item)) return `${field.name}.${key}`;
        if (field.mapKind === "message") {
          const inner = nulPath(field.message, item as Record<string, unknown>);
          if (inner !== undefined) return `${field.name}.${key}.${inner}`;
        }
      }
    }
  }
  return undefined;
}
