// A file a command was given to read. Node refuses a folder only at the first read, as "EISDIR: illegal operation on a directory,
// read", without its path: it is refused here first, named.
import { readFile, stat } from "node:fs/promises";
import { invalidParameter } from "../domain/errors.js";

/** The size of the file at `path`; a folder is 4001 naming it (a missing file fails as Node says, with its path). */
export async function inputFileSize(path: string): Promise<number> {
  const info = await stat(path);
  if (info.isDirectory()) throw invalidParameter(`${path}: is a directory, not a file`);
  return info.size;
}

/** The bytes of the file at `path`, a folder refused as by inputFileSize. */
export async function readInputFile(path: string): Promise<Buffer> {
  await inputFileSize(path);
  return readFile(path);
}
