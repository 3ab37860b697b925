import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: keep file parallelism modest so servers and databases don't starve each other.
    maxWorkers: 2,
    // Each file in a process of its own (vitest's default pool, named here on purpose): the threads
    // pool cannot load usage-file-worker.ts (through config.ts), which starts reading a file when
    // imported on a worker thread.
    pool: "forks",
  },
});
