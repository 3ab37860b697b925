// The directory import file (docs/file-formats.md): one enterprise, its departments and members.
// Parsing reports the JSON line or the path of the offending field; nothing is applied on error.
import { IANAZone } from "luxon";
import { z } from "zod";
import { regexes } from "zod/v4/core";
import { foldEmail } from "./email-match.js";
import { characters, nameProblem, textProblem } from "./text-rules.js";
import { AppError, invalidParameter } from "./errors.js";
import { parseJsonExact } from "./exact-json.js";
import { describeJsonError } from "./json-errors.js";

/** Required text of at most `max` characters (code points, as the API's limits count), storable as sent (text-rules.ts). */
const textOf = (max: number) => z.string().min(1).refine((text) => characters(text) <= max, `longer than ${max} characters`)
  .refine((text) => textProblem(text) === undefined, "must not contain U+0000, a lone surrogate or bytes that are not UTF-8");
const id = textOf(128);
/** A name people read and tell apart: also no control, invisible or text-direction characters, no white space at either end (nameProblem). */
const nameOf = (max: number) => textOf(max).superRefine((text, context) => {
  const problem = nameProblem(text);
  if (problem !== undefined) context.addIssue({ code: "custom", message: problem });
});

/** Internationalized addresses too (RFC 6531: `élodie@x.example`), where zod's `email()` takes ASCII alone. */
const EMAIL_RULE = "not an e-mail address (a local part of 1 to 64 characters, \"@\", a domain of 1 to 255; no spaces, quotes or control characters)";
// At most 64 + 1 + 255 = 320 characters.
const email = z.string().regex(regexes.unicodeEmail, EMAIL_RULE).refine((text) => !/\p{Cc}/u.test(text) && textProblem(text) === undefined, EMAIL_RULE);

const directoryFile = z.object({
  enterprise: z.object({
    enterprise_id: id,
    name: nameOf(256),
    currency: z.enum(["CNY", "USD"]),
    time_zone: z.string().max(64).refine((name) => IANAZone.isValidZone(name), "not an IANA time zone name (e.g. \"UTC\", \"Asia/Shanghai\")")
      .optional(),
  }).strict(),
  departments: z.array(z.object({
    department_id: id,
    parent_department_id: id,
    name: nameOf(256),
  }).strict()).default([]),
  members: z.array(z.object({
    user_id: id,
    email,
    account_type: z.union([z.literal(1), z.literal(2)], { errorMap: () => ({ message: "must be 1 (all-platform account) or 2 (Work-only account)" }) }),
    department_ids: z.array(id).default([]),
  }).strict()).default([]),
}).strict();

export type DirectoryFile = z.infer<typeof directoryFile>;

export function parseDirectoryFile(fileText: string): DirectoryFile {
  const text = fileText.replace(/^\uFEFF/, ""); // a byte order mark, as some Windows editors write
  let json: unknown;
  try {
    json = parseJsonExact(text, "file", false); // a key given twice is refused: JSON.parse would keep the second
  } catch (error) {
    if (error instanceof AppError) throw error;
    throw invalidParameter(`not valid JSON: ${describeJsonError(text, error)}`);
  }
  const result = directoryFile.safeParse(json);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw invalidParameter(`${formatPath(issue.path)}: ${issue.message}`);
  }
  const file = result.data;
  assertUnique(file.departments.map((d) => d.department_id), "departments", "department_id");
  assertUnique(file.members.map((m) => m.user_id), "members", "user_id");
  assertUnique(file.members.map((m) => foldEmail(m.email)), "members", "email", file.members.map((m) => m.email));
  return file;
}

/** `keys` compared; `shown`, the values as the file gives them, named in the error. */
function assertUnique(keys: string[], list: string, field: string, shown = keys) {
  const firstAt = new Map<string, number>();
  keys.forEach((key, index) => {
    const first = firstAt.get(key);
    if (first === undefined) {
      firstAt.set(key, index);
      return;
    }
    const alike = shown[first] === shown[index] ? "" : ` as "${shown[first]}", compared case-insensitively`;
    throw invalidParameter(`${list}[${index}].${field}: "${shown[index]}" appears twice (first at ${list}[${first}]${alike})`);
  });
}

function formatPath(path: (string | number)[]): string {
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? p : `.${p}`)).join("") || "(file)";
}
