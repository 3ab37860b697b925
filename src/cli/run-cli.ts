// Runs one enterprise-admin command in the calling process: arguments, output streams and
// environment in, exit code out. main.ts is the process around it; tests call it directly.
import { CommanderError } from "commander";
import { cliFailureOf } from "./cli-errors.js";
import { processIo, type CliIo } from "./cli-io.js";
import { buildProgram } from "./program.js";

/**
 * Runs `args` (the words after the command's name) and resolves to the exit code: 0, 1 or 2 as
 * docs/cli.md says; a failure is one line on `io.stderr`. It never calls process.exit. `serve`
 * resolves once the server listens; the server runs on.
 */
export async function runCli(args: readonly string[], io: CliIo = processIo()): Promise<number> {
  try {
    await buildProgram(io).parseAsync([...args], { from: "user" });
    return 0;
  } catch (error) {
    // Commander has already written its own message (usage errors, --help, --version).
    if (error instanceof CommanderError) return error.exitCode;
    const failure = cliFailureOf(error);
    if (failure.message !== undefined) io.stderr.write(`error: ${failure.message}\n`);
    return failure.exitCode;
  }
}
