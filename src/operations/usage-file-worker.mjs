// The reading thread's entry: bundled with what it imports by worker-bundle.ts.
import "./usage-file-worker.ts";
