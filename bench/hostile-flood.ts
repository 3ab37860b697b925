// The HTTP/2 rapid-reset attacker for bench/hostile.ts, in its own process so that its busy loop never
// shares an event loop with the server or with the healthy client being timed: `sessions` floods from
// test/helpers/hostile-clients.ts side by side, each opening and cancelling streams and opening a new
// connection whenever the server ends one (as an attacker would).
//
// The parent sends one message: FloodConfig. Replies: { kind: "result", result: FloodTotals }.
import type http2 from "node:http2";
import { rapidResetFlood } from "../test/helpers/hostile-clients.js";

export interface FloodConfig {
  baseUrl: string;
  headers: http2.OutgoingHttpHeaders;
  sessions: number;
  durationMs: number;
  /** The attacker's address (a 127.x.y.z of its own, so the server's cool-down can tell it apart). */
  localAddress: string;
}

export interface FloodTotals {
  streams: number;
  sessions: number;
  goaways: number;
}

process.once("message", (config: FloodConfig) => {
  const floods = Array.from({ length: config.sessions }, () => rapidResetFlood(config.baseUrl, config.headers, config.durationMs, { localAddress: config.localAddress }));
  Promise.all(floods).then(
    (results) => {
      const totals: FloodTotals = {
        streams: results.reduce((n, r) => n + r.streams, 0),
        sessions: results.reduce((n, r) => n + r.sessions, 0),
        goaways: results.reduce((n, r) => n + r.goaways.length, 0),
      };
      process.send!({ kind: "result", result: totals }, () => process.exit(0));
    },
    (error: unknown) => process.send!({ kind: "error", message: String(error) }, () => process.exit(1)),
  );
});
