// Request validation from the proto's buf.validate rules, shared by every transport. The first
// violation becomes a 4001 whose message names the field path, e.g. "department_ids: value must ...".
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { pathToString } from "@bufbuild/protobuf/reflect";
import { createValidator } from "@bufbuild/protovalidate";
import { invalidParameter } from "../domain/errors.js";

const validator = createValidator();

export function validateRequest<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): void {
  const result = validator.validate(schema, message);
  if (result.kind === "valid") return;
  if (result.kind === "invalid") {
    const messages = result.error.violations.map((v) => `${pathToString(v.field) || schema.name}: ${v.message}`);
    throw invalidParameter(messages.join("; "));
  }
  throw result.error;
}
