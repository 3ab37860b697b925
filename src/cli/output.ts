// How every command prints its result (docs/cli.md, "Output"): JSON when --json is given or the
// stream is not a terminal, so scripts and pipes get the same shapes everywhere; else a table
// (cli-table3) for a person, with the Unix-second fields written as ISO 8601 times.
import Table from "cli-table3";
import type { Command } from "commander";
import type { CliStream } from "./cli-io.js";

type Value = unknown;

export interface Shape {
  /** Fields holding Unix seconds: ISO 8601 (UTC) in the table, numbers in JSON. */
  times?: readonly string[];
  /** The table's text for an empty list. */
  empty?: string;
}

export interface Output {
  /** JSON is printed: --json was given, or the stream is not a terminal. */
  readonly json: boolean;
  /** Prints a command's result: an object as a two-column table, a list of objects as a table with a header. */
  result(value: Value, shape?: Shape): void;
  /**
   * Prints a value made for scripts (an access token): alone on its line, piped or not, so
   * `$(enterprise-admin token create …)` is the token; with --json, `object` instead.
   */
  value(text: string, object: Value): void;
}

/** The output of `command` (its --json and its parents'), written to `stream` (stdout unless the result must not mix with data there). */
export function outputOf(command: Command, stream: CliStream): Output {
  const asked = command.optsWithGlobals().json === true;
  const json = asked || !stream.isTTY;
  const write = (text: string) => stream.write(`${text}\n`);
  return {
    json,
    result: (value, shape = {}) => write(json ? JSON.stringify(value) : humanText(value, shape)),
    value: (text, object) => write(asked ? JSON.stringify(object) : text),
  };
}

/** The table a person sees for `value`. */
export function humanText(value: Value, shape: Shape = {}): string {
  if (Array.isArray(value)) return listTable(value, shape);
  if (isRecord(value)) return recordTable(value, shape);
  return cell(value, shape, "");
}

/** No colours: the same text on every terminal, and in a captured terminal session. */
const plain = () => ({ style: { head: [], border: [] } });

function recordTable(record: Record<string, Value>, shape: Shape): string {
  const table = new Table(plain());
  for (const [key, value] of Object.entries(record)) table.push({ [key]: cell(value, shape, key) });
  return table.toString();
}

function listTable(items: Value[], shape: Shape): string {
  if (items.length === 0) return shape.empty ?? "(none)";
  if (!items.every(isRecord)) return items.map((item) => cell(item, shape, "")).join("\n");
  const columns = [...new Set(items.flatMap((item) => Object.keys(item)))];
  const table = new Table({ ...plain(), head: columns });
  for (const item of items) table.push(columns.map((column) => cell(item[column], shape, column)));
  return table.toString();
}

function cell(value: Value, shape: Shape, key: string): string {
  if (value === null || value === undefined) return "";
  if (shape.times?.includes(key) && typeof value === "number") return isoTime(value);
  if (Array.isArray(value)) {
    if (value.length === 0) return "(none)";
    return value.every(isRecord) ? listTable(value, shape) : value.map((v) => cell(v, shape, "")).join(", ");
  }
  if (isRecord(value)) return recordTable(value, shape);
  return String(value);
}

/** Unix seconds as ISO 8601 in UTC, to the second: 2026-11-25T09:15:49Z. */
export const isoTime = (seconds: number) => new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");

const isRecord = (value: Value): value is Record<string, Value> => typeof value === "object" && value !== null && !Array.isArray(value);
