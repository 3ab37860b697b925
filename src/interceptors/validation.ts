// Request validation from the proto's buf.validate rules, shared by every transport. The violations
// become one 4001 whose message names each field path, e.g. "department_ids: must contain ...".
import { ScalarType, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { pathToString } from "@bufbuild/protobuf/reflect";
import { createValidator } from "@bufbuild/protovalidate";
import type { Interceptor } from "@connectrpc/connect";
import { invalidParameter } from "../domain/errors.js";
import { textProblem } from "../domain/text-rules.js";

const validator = createValidator();

/** Validates each request message before the handler sees it (a stream's as it is read). */
export const validationInterceptor: Interceptor = (next) => (req) => {
  if (!req.stream) {
    validateRequest(req.method.input, req.message);
    return next(req);
  }
  const schema = req.method.input;
  return next({ ...req, message: validated(schema, req.message) });
};

async function* validated<Desc extends DescMessage>(schema: Desc, messages: AsyncIterable<MessageShape<Desc>>): AsyncGenerator<MessageShape<Desc>> {
  for await (const message of messages) {
    validateRequest(schema, message);
    yield message;
  }
}

export function validateRequest<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): void {
  rejectUnreadable(schema, message as unknown as Record<string, unknown>);
  const result = validator.validate(schema, message);
  if (result.kind === "valid") return;
  if (result.kind === "invalid") {
    // One message a field, its first: a proto's own rule (the milliseconds hint) comes before the range it explains.
    const messages = new Map<string, string>();
    for (const v of result.error.violations) {
      const path = pathToString(v.field) || schema.name;
      if (!messages.has(path)) messages.set(path, `${path}: ${inPlainWords(v.message)}`);
    }
    throw invalidParameter([...messages.values()].join("; "));
  }
  throw result.error;
}

/**
 * protovalidate's "at least 1 characters", "1000 item(s)" and "must be in list [, csv, ndjson]" (the empty word: left out) as a person
 * would write them.
 */
function inPlainWords(message: string): string {
  return message.replace(/\b1 characters\b/g, "1 character").replace(/\b(\d+) item\(s\)/g, (_, n: string) => (n === "1" ? "1 item" : `${n} items`))
    .replace(/^must be in list \[(.*)\]$/, (_, list: string) => {
      const words = list.split(", ");
      const named = words.filter((word) => word !== "");
      return `must be one of ${named.join(", ")}${named.length < words.length ? ", or left out" : ""}`;
    });
}

/**
 * No string may hold U+0000 or a lone surrogate (see text-rules.ts), checked here for every transport, so SQLite and PostgreSQL
 * accept exactly the same input and return it unchanged. No message may carry a field the schema lacks: JSON readers refuse one,
 * and protobuf's binary decoder keeps it aside (`$unknown`), where it would be dropped unread.
 */
function rejectUnreadable(schema: DescMessage, message: Record<string, unknown>): void {
  const found = unreadable(schema, message);
  if (found !== undefined) throw invalidParameter(`${found.path}: ${found.problem}`);
}

interface Found {
  path: string;
  problem: string;
}

/**
 * The first unknown field or string that cannot be stored in `message`, if any. A list item's path is spelled out only when one is
 * found: a batch of 1,000 events has 10,000 strings.
 */
function unreadable(schema: DescMessage, message: Record<string, unknown>): Found | undefined {
  const unknown = (message.$unknown as Array<{ no: number }> | undefined)?.[0];
  if (unknown) return { path: `field number ${unknown.no}`, problem: `not a field of ${schema.name} in this service's schema; unknown fields are refused` };
  for (const field of schema.fields) {
    const value = message[field.localName];
    let found: Found | undefined;
    if (field.fieldKind === "scalar") {
      if (field.scalar === ScalarType.STRING) found = checkText(value, field.name);
    } else if (field.fieldKind === "message") {
      if (value) found = inside(unreadable(field.message, value as Record<string, unknown>), field.name);
    } else if (field.fieldKind === "list") {
      const items = value as unknown[];
      for (let i = 0; i < items.length && !found; i++) {
        if (field.listKind === "message") found = inside(unreadable(field.message, items[i] as Record<string, unknown>), `${field.name}[${i}]`);
        else if (field.scalar === ScalarType.STRING) found = checkText(items[i], field.name, i);
      }
    } else if (field.fieldKind === "map") {
      for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
        found = checkText(key, `${field.name} key ${JSON.stringify(key)}`);
        if (!found && field.mapKind === "scalar" && field.scalar === ScalarType.STRING) found = checkText(item, `${field.name}.${key}`);
        if (!found && field.mapKind === "message") found = inside(unreadable(field.message, item as Record<string, unknown>), `${field.name}.${key}`);
        if (found) break;
      }
    }
    if (found) return found;
  }
  return undefined;
}

// Module functions, not closures made per call: the loader names each closure it creates (keepNames).

/** `text`'s problem, if it is a string that cannot be stored; `index` is its place in a list. */
function checkText(text: unknown, path: string, index?: number): Found | undefined {
  const problem = typeof text === "string" ? textProblem(text) : undefined;
  return problem === undefined ? undefined : { path: index === undefined ? path : `${path}[${index}]`, problem };
}

function inside(found: Found | undefined, prefix: string): Found | undefined {
  return found && { ...found, path: `${prefix}.${found.path}` };
}
