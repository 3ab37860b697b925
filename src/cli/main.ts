// The enterprise-admin process: runs the command line (run-cli.ts) on this process's arguments,
// streams and environment. A failure exits at once with its code; success lets the process end
// when its work does (`serve` runs until a signal).
import { runCli } from "./run-cli.js";

const exitCode = await runCli(process.argv.slice(2));
if (exitCode !== 0) process.exit(exitCode);
