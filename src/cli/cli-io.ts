// Where a command writes and which environment it reads: the process's own (main.ts), or a
// caller's (tests run the command line in-process with their own streams and variables).
import type { Writable } from "node:stream";

/** An output stream; `isTTY` true means a person's terminal (tables, progress bars). */
export type CliStream = Writable & { isTTY?: boolean };

export interface CliIo {
  stdout: CliStream;
  stderr: CliStream;
  /** Read instead of process.env: DATABASE_URL, ENTERPRISE_ADMIN_MASTER_KEY, IMPORT_CHUNK_EVENTS, … */
  env: NodeJS.ProcessEnv;
}

export const processIo = (): CliIo => ({ stdout: process.stdout, stderr: process.stderr, env: process.env });
