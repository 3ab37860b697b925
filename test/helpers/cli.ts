// The enterprise-admin command line, two ways. `cli` runs it in this process (src/cli/run-cli.ts)
// with streams and an environment of its own: most tests. `cliProcess` and `cliOnTerminal` run the
// real binary (bin/enterprise-admin.mjs) as a child process, for what only a process shows: its exit
// status, a terminal, a signal. Both see this process's environment with DATABASE_URL emptied, so a command
// reaches only the database its --db names; `env` adds or overrides variables.
import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process";
import { Writable } from "node:stream";
import { promisify } from "node:util";
import { runCli } from "../../src/cli/run-cli.js";

const run = promisify(execFile);
const bin = new URL("../../bin/enterprise-admin.mjs", import.meta.url).pathname;

export interface CliResult {
  /** The exit code: 0 on success. */
  code: number;
  stdout: string;
  stderr: string;
}

const environment = (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({ ...process.env, DATABASE_URL: "", ...env });

/** A piped stream (not a terminal) that keeps what is written to it. */
function captured() {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      done();
    },
  });
  return { stream, text: () => Buffer.concat(chunks).toString("utf8") };
}

/** The command line in this process: no process start, the same commands, output and exit codes. */
export async function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const stdout = captured();
  const stderr = captured();
  const code = await runCli(args, { stdout: stdout.stream, stderr: stderr.stream, env: environment(env) });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

async function runProcess(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(file, args, { env: environment(env) });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as CliResult;
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** The real binary as a child process left running (output piped), for a test that signals it. */
export const cliChild = (args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess => spawn(process.execPath, [bin, ...args], { env: environment(env) });

/** The real binary as a child process, its output piped. */
export const cliProcess = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> => runProcess(process.execPath, [bin, ...args], env);

/** Whether cliAsNobody can run here: as root, with setpriv(1), in a clone that nobody may read. */
export function canRunAsNobody(): boolean {
  if (process.getuid?.() !== 0) return false;
  try {
    execFileSync("setpriv", [...AS_NOBODY, process.execPath, "-e", "require('node:fs').readFileSync(process.argv[1])", bin], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** The real binary run as the user nobody (setpriv(1); root only), as a service account that may not write what root made. */
export const cliAsNobody = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> =>
  runProcess("setpriv", [...AS_NOBODY, process.execPath, bin, ...args], env);

const AS_NOBODY = ["--reuid=nobody", "--regid=nogroup", "--clear-groups"];

const shellQuoted = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;

/**
 * The real binary on a terminal, as a person runs it: under script(1), which gives it a pseudo-terminal
 * for stdin, stdout and stderr. Both streams arrive in `stdout`, as the terminal shows them (lines end
 * in "\r\n").
 */
export const cliOnTerminal = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> =>
  runProcess("script", ["-qec", [process.execPath, bin, ...args].map(shellQuoted).join(" "), "/dev/null"], env);
