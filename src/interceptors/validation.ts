// Request validation from the proto's buf.validate rules, shared by every transport. The first
// violation becomes a 4001 whose message names the field path, e.g. "department_ids: value must ...".
import { ScalarType, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { pathToString } from "@bufbuild/protobuf/reflect";
import { createValidator } from "@bufbuild/protovalidate";
import { invalidParameter } from "../domain/errors.js";

const validator = createValidator();

export function validateRequest<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): void {
  rejectNulCharacters(schema, message as unknown as Record<string, unknown>, "");
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
 * Checked here for every transport, so SQLite and PostgreSQL accept exactly the same input. The
 * field's path is spelled out only for the error (a batch of 1,000 events has 10,000 strings).
 */
function rejectNulCharacters(schema: DescMessage, message: Record<string, unknown>, prefix: string): void {
  const nul = (text: unknown) => typeof text === "string" && text.includes("\u0000");
  const refuse = (at: string) => invalidParameter(`${at}: must not contain the NUL character (U+0000)`);
  for (const field of schema.fields) {
    const value = message[field.localName];
    if (field.fieldKind === "scalar") {
      if (field.scalar === ScalarType.STRING && nul(value)) throw refuse(`${prefix}${field.name}`);
    } else if (field.fieldKind === "message") {
      if (value) rejectNulCharacters(field.message, value as Record<string, unknown>, `${prefix}${field.name}.`);
    } else if (field.fieldKind === "list") {
      const items = value as unknown[];
      for (let i = 0; i < items.length; i++) {
        if (field.listKind === "message") rejectNulCharacters(field.message, items[i] as Record<string, unknown>, `${prefix}${field.name}[${i}].`);
        else if (field.scalar === ScalarType.STRING && nul(items[i])) throw refuse(`${prefix}${field.name}[${i}]`);
      }
    } else if (field.fieldKind === "map") {
      for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
        if (nul(key)) throw refuse(`${prefix}${field.name} key`);
        if (field.mapKind === "scalar" && field.scalar === ScalarType.STRING && nul(item)) throw refuse(`${prefix}${field.name}.${key}`);
        else if (field.mapKind === "message") rejectNulCharacters(field.message, item as Record<string, unknown>, `${prefix}${field.name}.${key}.`);
      }
    }
  }
}
