// A temporary folder for the files of one describe block's tests, removed once they have run.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";

/** Makes the folder now (call it in a describe block's body) and removes it with everything in it after the block's tests. */
export function scratchFolder(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
