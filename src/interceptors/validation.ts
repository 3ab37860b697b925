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
 * Checked here for every transport, so SQLite and PostgreSQL accept exactly the same input.
 */
function rejectNulCharacters(schema: DescMessage, message: Record<string, unknown>, prefix: string): void {
  for (const field of schema.fields) {
    const value = message[field.localName];
    const path = `${prefix}${field.name}`;
    const check = (text: unknown, at: string) => {
      if (typeof text === "string" && text.includes("\u0000")) throw invalidParameter(`${at}: must not contain the NUL character (U+0000)`);
    };
    if (field.fieldKind === "scalar" && field.scalar === ScalarType.STRING) check(value, path);
    else if (field.fieldKind === "message" && value) rejectNulCharacters(field.message, value as Record<string, unknown>, `${path}.`);
    else if (field.fieldKind === "list") {
      (value as unknown[]).forEach((item, i) => {
        if (field.listKind === "message") rejectNulCharacters(field.message, item as Record<string, unknown>, `${path}[${i}].`);
        else if (field.scalar === ScalarType.STRING) check(item, `${path}[${i}]`);
      });
    } else if (field.fieldKind === "map") {
      for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
        check(key, `${path} key`);
        if (field.mapKind === "scalar" && field.scalar === ScalarType.STRING) check(item, `${path}.${key}`);
        else if (field.mapKind === "message") rejectNulCharacters(field.message, item as Record<string, unknown>, `${path}.${key}.`);
      }
    }
  }
}
