// The one line and the exit code of a failed command (docs/cli.md, "Errors and exit codes"): 2 for
// input the command cannot take (a bad value, setting or file, an unknown enterprise, a file not there), 1
// for anything else (the store unreachable, busy or full; a fault).
import { AppError } from "../domain/errors.js";
import { BadSetting } from "../env-number.js";

/** Node's file errors, in a person's words. */
const FILE_REASONS: Record<string, string> = {
  ENOENT: "no such file or directory",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  EISDIR: "is a directory",
  ENOTDIR: "a part of the path is not a directory",
  EROFS: "read-only file system",
  ENOSPC: "no space left on the device",
};

export interface CliFailure {
  /** Absent when the command has already said what failed. */
  message?: string;
  exitCode: 1 | 2;
}

/** A failure the command has already reported on stderr in its own words: only the exit code is left. */
export class ReportedFailure extends Error {
  constructor(readonly exitCode: 1 | 2) {
    super(`exit code ${exitCode}`);
  }
}

export function cliFailureOf(error: unknown): CliFailure {
  if (error instanceof ReportedFailure) return { exitCode: error.exitCode };
  if (error instanceof AppError || error instanceof BadSetting) return { message: error.message, exitCode: 2 };
  const { code, path } = (error ?? {}) as { code?: unknown; path?: unknown };
  if (typeof code === "string" && typeof path === "string" && code in FILE_REASONS) {
    return { message: `${path}: ${FILE_REASONS[code]}`, exitCode: code === "ENOENT" ? 2 : 1 };
  }
  return { message: error instanceof Error ? error.message : String(error), exitCode: 1 };
}
