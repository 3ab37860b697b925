// A long read's checkpoint. SQLite answers synchronously, so a report or export of months would hold the
// thread from start to end: every other call (another tenant's included) would wait, and neither its
// deadline's timer nor its caller's going away could stop it. At each checkpoint it lets the calls and
// timers waiting run, then stops if its own call has ended.
import { setImmediate } from "node:timers/promises";

export async function takeTurn(signal: AbortSignal): Promise<void> {
  await setImmediate();
  signal.throwIfAborted();
}
