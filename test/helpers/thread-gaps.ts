// How long work held the thread at a stretch: the service of an end-to-end test runs in the test's
// process, so a timer of the test ticks only when the service lets the thread go, and the longest
// gap between ticks is the longest step it held.

/** Runs `work` with a 1 ms timer ticking beside it: its result, its time and the longest gap between ticks, in ms. */
export async function withThreadGaps<T>(work: () => Promise<T>): Promise<{ result: T; took: number; longestGap: number }> {
  let last = performance.now();
  let longestGap = 0;
  const ticking = setInterval(() => {
    const now = performance.now();
    longestGap = Math.max(longestGap, now - last);
    last = now;
  }, 1);
  const started = performance.now();
  try {
    const result = await work();
    return { result, took: performance.now() - started, longestGap };
  } finally {
    clearInterval(ticking);
  }
}
