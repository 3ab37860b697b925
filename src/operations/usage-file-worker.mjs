// The import's threads' entry: bundled with what it imports by worker-bundle.ts.
import { runUsageFileThread } from "./usage-file-worker.ts";

await runUsageFileThread();
