// The first-pass thread's entry: bundled with what it imports by worker-bundle.ts.
import { runRangeCheck } from "./usage-range-check.ts";

await runRangeCheck();
