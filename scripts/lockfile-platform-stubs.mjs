// npm leaves the other platforms' optional @bufbuild/buf-* binaries out of package-lock.json when the
// registry cannot serve them (they 404 here), and `npm ci` then refuses the lockfile (npm/cli#9846).
// This adds stub entries for them (skipped on Linux, nothing fetched). Run after every `npm install`.
import { readFileSync, writeFileSync } from "node:fs";

const path = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(path, "utf8"));
const version = lock.packages["node_modules/@bufbuild/buf"].version;
const platforms = [["darwin-arm64", "darwin", "arm64"], ["darwin-x64", "darwin", "x64"], ["linux-armv7", "linux", "arm"],
  ["win32-arm64", "win32", "arm64"], ["win32-x64", "win32", "x64"], ["linux-aarch64", "linux", "arm64"]];
for (const [name, os, cpu] of platforms) {
  const key = `node_modules/@bufbuild/buf-${name}`;
  if (!lock.packages[key]) {
    lock.packages[key] = { version, cpu: [cpu], dev: true, license: "Apache-2.0", optional: true, os: [os], engines: { node: ">=12" } };
  }
}
writeFileSync(path, JSON.stringify(lock, null, 2) + "\n");
