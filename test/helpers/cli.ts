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

export async function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], { env: { ...process.env, DATABASE_URL: "", ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as CliResult;
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
