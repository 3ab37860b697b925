import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: keep file parallelism modest so servers and databases don't starve each other.
    maxWorkers: 2,
  },
});
