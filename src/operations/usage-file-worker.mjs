// The worker thread's entry: the TypeScript sources run through tsx's loader, as in bin/.
import { register } from "tsx/esm/api";

register();
await import("./usage-file-worker.ts");
