// A temporary folder for the files of one describe block's tests, made before they run and removed once they have.
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";

/**
 * The folder's path, for a describe block's body; the folder exists while the block's tests run (a block whose tests a filter
 * leaves out makes none), and goes with everything in it after them.
 */
export function scratchFolder(prefix: string): string {
  const dir = join(tmpdir(), `${prefix}${randomBytes(6).toString("hex")}`);
  beforeAll(() => mkdirSync(dir, { mode: 0o700 }));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
