// Bundles the browser console (console/*.ts, uPlot and its CSS) into dist/console with esbuild:
// console.js, console.css and index.html, the only files GET /console serves (src/console-assets.ts).
// Run by `npm ci` (the `prepare` script), `npm run build:console`, `npm run demo` and the browser test.
import { copyFile, mkdir } from "node:fs/promises";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));

export async function buildConsole(outdir = `${root}dist/console`): Promise<string> {
  await mkdir(outdir, { recursive: true });
  await build({
    entryPoints: { console: `${root}console/main.ts` },
    bundle: true,
    format: "esm",
    target: "es2022",
    minify: true,
    sourcemap: false,
    outdir,
    logLevel: "warning",
  });
  await copyFile(`${root}console/index.html`, `${outdir}/index.html`);
  return outdir;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.error(`console built in ${await buildConsole()}`);
}
