// The range checker's thread entry: the TypeScript sources run through tsx's loader, as in bin/.
import { register } from "tsx/esm/api";

register();
const { runRangeCheck } = await import("./usage-file-check.ts");
await runRangeCheck();
