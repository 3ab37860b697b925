// Records (messages of one proto type) as CSV or NDJSON text: the REST body of a server-streaming
// method, whose response's one repeated message field carries the records, and the CLI export's
// file. Column and key names are the proto field names, in field order. CSV is RFC 4180 (CRLF line
// ends, a header line, fields quoted when they hold a comma, a quote or a line break): each text cell
// is quoted by d3-dsv's csvFormatValue, the lines joined here (d3-dsv's whole-file writer ends lines
// with LF alone); numbers and booleans need no quotes; a repeated field is its
// values joined by " | "; a cell a spreadsheet would take for a formula starts with '. NDJSON is one
// REST JSON object a line (rest-json.ts: 64-bit integers as exact numbers, repeated fields as arrays).
import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { csvFormatRow, csvFormatValue } from "d3-dsv";
import { messageToRestJson } from "./rest-json.js";

export const RECORD_FORMATS = ["csv", "ndjson"] as const;
export type RecordFormat = (typeof RECORD_FORMATS)[number];

export const CONTENT_TYPES: Record<RecordFormat, string> = {
  csv: "text/csv; charset=utf-8",
  ndjson: "application/x-ndjson",
};

/** Separates the values of a repeated field in a CSV cell. */
export const CSV_LIST_SEPARATOR = " | ";

export interface RecordEncoder {
  /** What comes before the first record: the CSV header line; nothing for NDJSON. */
  header: string;
  encode(records: readonly object[]): string;
}

/** Records as given (init shapes: a missing field is its zero value), keyed by the fields' local names. */
export function recordEncoder(schema: DescMessage, format: RecordFormat): RecordEncoder {
  if (format === "ndjson") {
    return { header: "", encode: (records) => records.map((record) => `${messageToRestJson(schema, record as Record<string, unknown>)}\n`).join("") };
  }
  const cells = schema.fields.map(csvCell);
  const names = schema.fields.map((field) => field.localName);
  const values: string[] = new Array<string>(names.length);
  const line = (record: Record<string, unknown>) => {
    for (let i = 0; i < names.length; i++) values[i] = cells[i]!(record[names[i]!]);
    return `${values.join(",")}\r\n`;
  };
  return {
    header: `${csvFormatRow(schema.fields.map((field) => field.name))}\r\n`,
    encode: (records) => {
      let text = "";
      for (const record of records) text += line(record as Record<string, unknown>);
      return text;
    },
  };
}

/**
 * The field of a streamed response that carries its records: its only field, repeated, of a message
 * whose fields are scalars or repeated scalars (each a CSV cell). Throws otherwise, at start-up.
 */
export function recordsField(response: DescMessage): DescField & { fieldKind: "list"; listKind: "message" } {
  const [field, ...others] = response.fields;
  if (!field || others.length > 0 || field.fieldKind !== "list" || field.listKind !== "message") {
    throw new Error(`${response.typeName}: a streamed response must have exactly one field, a repeated message (the records)`);
  }
  for (const column of field.message.fields) {
    const scalar = column.fieldKind === "scalar" || (column.fieldKind === "list" && column.listKind === "scalar");
    if (!scalar || column.scalar === ScalarType.BYTES) {
      throw new Error(`${field.message.typeName}.${column.name}: a record's fields must be scalars or repeated scalars (not bytes)`);
    }
  }
  return field;
}

/**
 * The CSV cell of a value of `field` (a missing value is the zero value): a text's formula defused,
 * then quoted by d3-dsv where it must be. A number or a boolean never needs quotes.
 */
function csvCell(field: DescField): (value: unknown) => string {
  const text = (v: unknown) => (typeof v === "boolean" ? (v ? "true" : "false") : String(v));
  if (field.fieldKind === "list") return remembered((v) => textCell(((v as unknown[] | undefined) ?? []).map(text).join(CSV_LIST_SEPARATOR)));
  if (field.fieldKind === "scalar" && field.scalar === ScalarType.STRING) return remembered((v) => (v === undefined || v === null ? "" : textCell(String(v))));
  const zero = field.fieldKind === "scalar" && field.scalar === ScalarType.BOOL ? "false" : "0";
  return (v) => (v === undefined || v === null ? zero : text(v));
}

/**
 * A text or list cell that keeps the last cell it made: an export's rows come per member and day,
 * so a member's and a date's cells repeat on consecutive rows. A list is the same by identity.
 */
function remembered(cell: (value: unknown) => string): (value: unknown) => string {
  let last = { value: undefined as unknown, cell: cell(undefined) };
  return (value) => {
    if (last.value !== value) last = { value, cell: cell(value) };
    return last.cell;
  };
}

/**
 * A text cell, against CSV injection as OWASP advises, so that a spreadsheet shows a name such as
 * =HYPERLINK(...) as text instead of running it: a text starting with =, +, -, @, tab or CR gets a
 * leading '; and one holding ";" or a tab is quoted, as d3-dsv quotes one holding a comma, since a
 * spreadsheet in many locales splits a .csv file on ";" (or a tab), which would start a new cell inside
 * it ("x;=1+1"). A number is left as it is (-5 is no formula).
 */
function textCell(text: string): string {
  const cell = csvFormatValue(FORMULA_START.test(text) ? `'${text}` : text);
  return cell.startsWith('"') || !OTHER_SEPARATOR.test(cell) ? cell : `"${cell}"`;
}

const FORMULA_START = /^[=+\-@\t\r]/;
const OTHER_SEPARATOR = /[;\t]/;
