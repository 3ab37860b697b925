// Renders docs/cli.md from the command definitions of src/cli/program.ts (`npm run docs:cli`): every
// command, its arguments and options with their defaults and descriptions. A test fails when the
// committed file and the definitions disagree.
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Command, Option } from "commander";
import { DEMO_USAGE_DAYS } from "../src/demo/usage.js";
import { buildProgram } from "../src/cli/program.js";

/** A table cell: pipes escaped, so a description may hold `csv|ndjson`. */
const cellText = (text: string) => text.replaceAll("|", "\\|");

function optionRow(option: Option): string {
  const facts = [
    option.mandatory ? "required" : "",
    option.defaultValue !== undefined && option.defaultValue !== false ? `default \`${String(option.defaultValue)}\`` : "",
  ].filter(Boolean).join("; ");
  return `| \`${cellText(option.flags)}\` | ${cellText(option.description)} | ${facts} |`;
}

function commandSection(command: Command, path: string[]): string[] {
  const name = [...path, command.name()].join(" ");
  const children = command.commands.filter((c) => c.name() !== "help");
  const lines = [`## \`${name}\``, ""];
  if (command.description()) lines.push(`${command.description()}.`, "");
  if (children.length > 0) {
    lines.push(`Subcommands: ${children.map((c) => `\`${c.name()}\``).join(", ")}.`, "");
  } else {
    const args = command.registeredArguments.map((a) => (a.required ? `<${a.name()}>` : `[${a.name()}]`));
    lines.push("```", [name, ...args, command.options.length > 0 ? "[options]" : ""].filter(Boolean).join(" "), "```", "");
    const described = command.registeredArguments.filter((a) => a.description);
    if (described.length > 0) {
      lines.push("| argument | description |", "|---|---|", ...described.map((a) => `| \`${a.name()}\` | ${cellText(a.description)} |`), "");
    }
    if (command.options.length > 0) lines.push("| option | description | |", "|---|---|---|", ...command.options.map(optionRow), "");
  }
  return [...lines, ...children.flatMap((child) => commandSection(child, [...path, command.name()]))];
}

export function renderCliDoc(): string {
  const program = buildProgram();
  const [, ...commands] = commandSection(program, []).join("\n").split(/\n(?=## )/);
  return `# Command line reference

Generated from the command definitions (\`src/cli/program.ts\`) by \`npm run docs:cli\`; a test keeps the
two in step. Do not edit by hand.

\`enterprise-admin\` is the package's \`bin\`; from a checkout, run it as \`npm run -s cli -- …\`, which runs in
the checkout's root whatever your shell's folder: relative paths (files, \`--out\`, \`--db\`) are then the root's,
so give others as absolute paths, or run \`bin/enterprise-admin.mjs\` itself.
\`enterprise-admin --help\` and \`enterprise-admin <command> --help\` print the same descriptions.

## Global options

| option | description |
|---|---|
${program.createHelp().visibleOptions(program).map((o) => `| \`${cellText(o.flags)}\` | ${cellText(o.description)} |`).join("\n")}

Global options may come before or after the command: \`enterprise-admin app list --enterprise demo --json\`.

## Output

- A command's result goes to stdout as JSON when \`--json\` is given or stdout is not a terminal (a pipe,
  a file, \`$(…)\`): one line, the same shape whichever way it runs. On a terminal it is a table; times
  that JSON gives as Unix seconds (\`created_at\`, \`expires_at\`) show as ISO 8601 in UTC
  (\`2026-11-25T09:24:25Z\`).
- \`app create\` prints its \`app_id\` and \`app_secret\` as JSON on a terminal too: the secret is shown this
  once, in the form scripts and people copy alike.
- \`token create\` and \`seed --demo\` print the access token alone on stdout, piped or not, so
  \`TOKEN=$(enterprise-admin token create …)\` is the token; with \`--json\` they print an object with the
  token and its \`token_id\`.
- \`export usage\` writes the export to stdout (unless \`--out\`): its summary goes to stderr, as a table
  when stderr is a terminal and \`--json\` is not given, else as JSON.
- Notes for a person (a created directory, a token's \`token_id\`, what \`seed\` loaded) and progress bars
  (on a terminal only) go to stderr.

## Errors and exit codes

A failed command prints one line on stderr, \`error: …\`, naming what is wrong: the file and the line
(\`line 2 (event_id "m-2"): timestamp: must be Unix seconds; 1730000000123 looks like milliseconds
(1730000000 in seconds)\`), a file that is not there (\`error: events.ndjson: no such file or
directory\`), an unknown enterprise (\`error: --enterprise: enterprise "nope" does not exist (import a directory file
first)\`), a database that cannot be reached (\`error: cannot connect to the database
postgres://127.0.0.1:5432/admin: connection refused (is PostgreSQL running there?)\`). Nothing of a
rejected file is applied.

| exit code | meaning |
|---|---|
| 0 | done |
| 1 | the store cannot be reached, is busy or full; the master key file cannot be used (readable by group or others, damaged, not the key of its id); \`keys verify\` found a data key it cannot unwrap; any other failure |
| 2 | input the command cannot take: a bad value or file, a bad setting (\`--port abc\`, \`SQLITE_CACHE_MIB=abc\`, also for \`serve\`), a file that is not there, an unknown enterprise, app or token |

Commander's own usage errors (an unknown option, a missing required one) print the error and the
command's help, exit 1.

## Database

Every command, \`serve\` too, opens the database of \`--db\`, else \`DATABASE_URL\`, else
\`./data/enterprise-admin.sqlite\` (a file path or \`file:\` URL is SQLite, \`postgres://…\` PostgreSQL),
applies pending migrations, then does its job. Opening a SQLite file in a directory that does not exist
creates it and says so on stderr (\`created directories ./data, ./data/new for the database
./data/new/admin.sqlite\`).

## The demo data

\`seed --demo\` imports the enterprise \`demo\` (11 departments, 7 members), two environment
configurations, and the usage of the ${DEMO_USAGE_DAYS} days up to and including \`--as-of\` (default: today in
Asia/Shanghai). Each member has a habit: how many events a weekday, and which of four models (from a
heavy user of \`atlas-4\` to a finance member with a question a day; completion-heavy tooling; research
on a fine-tuned \`Custom\` model, which costs nothing); weekends are quiet, and use rises and falls
over the year. Each day's events come from a generator seeded by its date
alone: a past day is the same whichever day the seed runs, so figures over past days are reproducible,
and seeding again with a later date adds only the days since (event ids \`demo-<date>-<user_id>-<n>\`).
The \`--as-of\` day gets all of its events, which fall between 09:00 and 19:00 Asia/Shanghai, even
those later than the moment of the run.

${commands.join("\n")}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(new URL("../docs/cli.md", import.meta.url), renderCliDoc());
}
