// The enterprise-admin command: runs the command tree of program.ts; a failure is one line on
// stderr and a non-zero exit code (cli-errors.ts).
import { cliFailureOf } from "./cli-errors.js";
import { buildProgram } from "./program.js";

buildProgram().parseAsync(process.argv).catch((error: unknown) => {
  const failure = cliFailureOf(error);
  console.error(`error: ${failure.message}`);
  process.exit(failure.exitCode);
});
