import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // A test that starts the CLI waits for its start-up (about 1.3 s idle), several times slower on a loaded 2-core machine.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: keep file parallelism modest so servers and databases don't starve each other.
    maxWorkers: 2,
    // Worker processes (vitest's default pool, named here on purpose): the threads pool cannot load
    // usage-file-worker.ts (through config.ts), which starts reading a file when imported on a
    // worker thread.
    pool: "forks",
    // Each worker runs its test files one after another in one process, loading src/ and the
    // dependencies once instead of once per file (per file, the loading costs as much as the tests
    // themselves). Test files therefore leave nothing behind: a server's settings and master keys are
    // passed to it (test/helpers/service.ts), never set in process.env, and every file closes what it
    // starts (docs/operations.md, Tests and CI).
    isolate: false,
  },
});
