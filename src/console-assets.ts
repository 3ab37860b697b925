// Serves the browser console: GET /console (the page) and /console/<asset>, from the bundle that
// scripts/build-console.ts writes to dist/console (run by `npm ci` through `prepare`). These routes
// need no token: the page holds no data, and every call it makes carries the user's own bearer token.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { endWithBody } from "./http/compression.js";
import type { CallLog } from "./interceptors/call-log.js";
import type { HttpRequest, HttpResponse } from "./rest/envelope.js";

export const CONSOLE_DIR = fileURLToPath(new URL("../dist/console/", import.meta.url));

/** The bundle's files and their types; any other name under /console is 404. */
const ASSETS: Readonly<Record<string, string>> = {
  "index.html": "text/html; charset=utf-8",
  "console.js": "text/javascript; charset=utf-8",
  "console.css": "text/css; charset=utf-8",
};

/**
 * Scripts and styles from this origin only: no inline script or style, no eval, no other origin;
 * calls go to this server only; the page cannot be framed (clickjacking).
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CONSOLE_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-cache",
};

export class ConsoleAssets {
  constructor(private readonly dir: string = CONSOLE_DIR) {}

  /** Answers /console and /console/*; returns false for every other path. */
  handle(req: HttpRequest, res: HttpResponse, log: CallLog): boolean {
    const path = (req.url ?? "/").split("?")[0]!;
    if (path !== "/console" && !path.startsWith("/console/")) return false;
    log.procedure = "console";
    const rest = path.slice("/console/".length);
    const name = rest === "" ? "index.html" : rest;
    const type = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
    if (type === undefined) {
      sendText(res, 404, `no console asset ${path}`);
    } else if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("allow", "GET, HEAD");
      sendText(res, 405, `${req.method} is not allowed on ${path}`);
    } else {
      void this.send(res, name, type);
    }
    return true;
  }

  private async send(res: HttpResponse, name: string, type: string): Promise<void> {
    let body: Buffer;
    try {
      body = await readFile(join(this.dir, name));
    } catch {
      sendText(res, 503, "the console is not built: run `npm run build:console` (npm ci does it)");
      return;
    }
    for (const [header, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(header, value);
    res.statusCode = 200;
    res.setHeader("content-type", type);
    endWithBody(res, body);
  }
}

function sendText(res: HttpResponse, status: number, text: string): void {
  res.statusCode = status;
  res.setHeader("content-type", "text/plain; charset=utf-8");
  res.setHeader("x-content-type-options", "nosniff");
  res.end(text);
}
