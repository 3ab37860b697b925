// Worker threads on TypeScript: a thread's entry module (an .mjs beside its TypeScript) and all it
// imports are bundled by esbuild into one ES module, handed to the thread as a data: URL, so the
// thread starts without a TypeScript loader. (tsx's register() in each thread took 0.5 to 1 s: a
// hooks thread of its own, then every module through it; `import usage` starts two threads in turn.)
// The bundle must be self-contained: code that runs on a thread never imports this module.
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

/** The module at `entry` (a file: URL) and its imports as one ES module, for `new Worker(url, …)`. */
export async function bundledWorkerUrl(entry: URL): Promise<URL> {
  const { outputFiles } = await build({
    entryPoints: [fileURLToPath(entry)], bundle: true, write: false, format: "esm", platform: "node", target: "node20",
    // A package's ES module build where it has one: a data: URL module has no `require`.
    mainFields: ["module", "main"], logLevel: "silent",
  });
  return new URL(`data:text/javascript;base64,${Buffer.from(outputFiles[0]!.text).toString("base64")}`);
}
