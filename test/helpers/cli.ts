// The real CLI (bin/enterprise-admin.mjs) as a child process. DATABASE_URL is emptied so a command
// reaches only the database its --db names; `env` adds or overrides variables.
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);
const bin = new URL("../../bin/enterprise-admin.mjs", import.meta.url).pathname;

export interface CliResult {
  /** The exit code: 0 on success. */
  code: number;
  stdout: string;
  stderr: string;
}

async function runCli(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(file, args, { env: { ...process.env, DATABASE_URL: "", ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as CliResult;
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

export const cli = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> => runCli(process.execPath, [bin, ...args], env);

const shellQuoted = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;

/**
 * The CLI on a terminal, as a person runs it: under script(1), which gives it a pseudo-terminal for
 * stdin, stdout and stderr. Both streams arrive in `stdout`, as the terminal shows them (lines end
 * in "\r\n").
 */
export const cliOnTerminal = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> =>
  runCli("script", ["-qec", [process.execPath, bin, ...args].map(shellQuoted).join(" "), "/dev/null"], env);
