// A file a command was given to read. Node refuses a folder only at the first read, as "EISDIR: illegal operation on a directory,
// read", without its path: it is refused here first, named.
import { stat } from "node:fs/promises";
import { invalidParameter } from "../domain/errors.js";

/** The size of the file at `path`; a folder is 4001 naming it (a missing file fails as Node says, with its path). */
export async function inputFileSize(path: string): Promise<number> {
  const info = await stat(path);
  if (info.isDirectory()) throw invalidParameter(`${path}: is a directory, not a file`);
  return info.size;
}
