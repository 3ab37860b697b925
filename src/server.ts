// One port for HTTP/1.1 and cleartext HTTP/2 (h2c). Node's http2 server with allowHTTP1 serves
// HTTP/1.1 only over TLS, so a net server peeks at each connection's first bytes and hands the socket
// to the http2 server when they are the HTTP/2 preface, else to the http server. Every connection has
// a time limit at every stage (docs/operations.md, "Connections, deadlines and shutdown").
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { App } from "./app.js";
import type { ServerLimits } from "./config.js";
import { BadSetting } from "./env-number.js";
import { PeerCooldown } from "./peer-cooldown.js";

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
const { NGHTTP2_ENHANCE_YOUR_CALM, NGHTTP2_NO_ERROR } = http2.constants;
const RESET_WINDOW_MS = 10_000;

export interface Listener {
  port: number;
  /** Stops accepting, lets in-flight calls finish (up to the shutdown grace), then closes every connection. */
  close(): Promise<void>;
}

/**
 * The listen errors that say the host itself is wrong. A resolver that failed for now (EAI_AGAIN) is not among them: it may answer
 * on the next start, so it is no bad setting (exit 1, not 2, for a supervisor that restarts on 1).
 */
const UNLISTENABLE_HOSTS: Record<string, string> = {
  ENOTFOUND: "does not resolve to an address",
  EAI_NONAME: "does not resolve to an address",
  EADDRNOTAVAIL: "is no address of this machine to listen on",
};

export async function listen(app: App, port: number, host: string, limits: ServerLimits): Promise<Listener> {
  const h1 = http.createServer({
    headersTimeout: limits.headersTimeoutMs,
    // Node's own limit on receiving a request, a backstop only. Its clock starts at the first header
    // byte, the call's deadline (app.ts) once the headers are in, at most headersTimeout later: with
    // this margin the deadline always answers first (504, code 5040), never Node's bare 408.
    requestTimeout: limits.headersTimeoutMs + limits.requestTimeoutMs + 1_000,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // How often Node looks for expired headers and requests: a few times per headers timeout.
    connectionsCheckingInterval: Math.max(10, Math.min(1_000, Math.floor(limits.headersTimeoutMs / 4))),
  }, app.handler);
  // Node starts tracking connections, and the interval that enforces headersTimeout and requestTimeout,
  // on the server's "listening" event. This server is handed sockets and never listens itself, so it
  // is told here; without it a half-sent request holds its socket forever and closeIdleConnections()
  // finds nothing to close.
  h1.emit("listening");

  const h2 = http2.createServer({ settings: { maxConcurrentStreams: limits.http2MaxConcurrentStreams } }, app.handler);
  const sessions = new Set<http2.Http2Session>();
  const cooldown = new PeerCooldown(limits.abuseCooldownMs);
  let draining = false;
  h2.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    const address = session.socket.remoteAddress;
    superviseSession(session, limits, () => cooldown.start(address));
    if (draining) session.close();
  });

  const sockets = new Set<net.Socket>();
  /** Connections that have not yet sent enough to be routed. */
  const unrouted = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    if (cooldown.refuses(socket.remoteAddress)) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    unrouted.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      unrouted.delete(socket);
    });
    routeConnection(socket, limits, (target) => {
      unrouted.delete(socket);
      (target === "h2" ? h2 : h1).emit("connection", socket);
    });
  });
  server.maxConnections = limits.maxConnections;
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => {
      const why = UNLISTENABLE_HOSTS[error.code ?? ""];
      if (why) reject(new BadSetting(`--host/HOST: ${JSON.stringify(host)} ${why} (${error.code})`));
      // Not a bad setting either (exit 1): the other process may be gone on the next start.
      else if (error.code === "EADDRINUSE") reject(new Error(`--port/PORT: ${host} port ${port} is in use by another process: stop it, or choose another port (EADDRINUSE)`));
      else reject(error);
    });
    server.listen(port, host, () => resolve());
  });
  // After start-up an accept error (EMFILE, say) is not fatal: the connection is lost, the server goes on.
  server.on("error", () => {});
  const address = server.address() as net.AddressInfo;

  let closing: Promise<void> | undefined;
  return {
    port: address.port,
    close() {
      closing ??= (async () => {
        draining = true;
        app.beginShutdown(); // health NOT_SERVING; HTTP/1.1 answers carry Connection: close from now on
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        h1.close(); // closes the idle keep-alive connections and stops Node's timeout interval
        for (const socket of unrouted) socket.destroy();
        for (const session of sessions) session.close(); // GOAWAY: open streams may finish
        const deadline = Date.now() + limits.shutdownGraceMs;
        while (app.inFlight() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        app.cutInFlight();
        for (const session of sessions) session.destroy();
        for (const socket of sockets) socket.destroy();
        await closed;
        // The cut calls' responses close (and log) a moment after their sockets: before the database closes and the process exits.
        for (let waits = 0; app.inFlight() > 0 && waits < 50; waits++) await new Promise((r) => setTimeout(r, 20));
      })();
      return closing;
    },
  };
}

/**
 * Closes an HTTP/2 session that has had no open stream for the idle timeout, and one whose client
 * resets more streams than the limit allows in 10 s (the "rapid reset" flood): GOAWAY with
 * ENHANCE_YOUR_CALM, then the connection is closed and `onAbuse` starts the address's cool-down.
 */
function superviseSession(session: http2.Http2Session, limits: ServerLimits, onAbuse: () => void): void {
  let open = 0;
  let idle: NodeJS.Timeout | undefined;
  const armIdle = () => (idle = setTimeout(() => session.close(), limits.idleTimeoutMs));
  let resets = 0;
  let windowStart = Date.now();
  session.on("stream", (stream: http2.ServerHttp2Stream) => {
    open++;
    clearTimeout(idle);
    stream.once("close", () => {
      open--;
      if (stream.rstCode !== NGHTTP2_NO_ERROR) {
        const now = Date.now();
        if (now - windowStart >= RESET_WINDOW_MS) {
          windowStart = now;
          resets = 0;
        }
        if (++resets > limits.http2MaxResetsPer10s && !session.destroyed) {
          session.goaway(NGHTTP2_ENHANCE_YOUR_CALM);
          onAbuse();
          // Let the GOAWAY frame go out before the socket closes.
          setImmediate(() => session.destroy());
          return;
        }
      }
      if (open === 0 && !session.closed && !session.destroyed) armIdle();
    });
  });
  session.once("close", () => clearTimeout(idle));
  armIdle();
}

/**
 * Waits for a connection's first bytes and routes it. A connection that sends nothing, or only part
 * of the HTTP/2 preface, is closed after the headers timeout.
 */
function routeConnection(socket: net.Socket, limits: ServerLimits, route: (target: "h1" | "h2") => void): void {
  let head = Buffer.alloc(0);
  const onSilent = () => socket.destroy();
  socket.setTimeout(limits.headersTimeoutMs);
  socket.once("timeout", onSilent);
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const n = Math.min(head.length, PREFACE.length);
    const prefaceSoFar = head.subarray(0, n).equals(PREFACE.subarray(0, n));
    if (prefaceSoFar && head.length < PREFACE.length) return; // wait for the rest of the preface
    socket.off("data", onData);
    socket.setTimeout(0); // from here the http or http2 server's own timers apply
    socket.off("timeout", onSilent);
    socket.pause();
    socket.unshift(head);
    // http2 reads the unshifted bytes itself when it takes the socket over; resuming here would
    // emit them as "data" events to no one.
    route(prefaceSoFar ? "h2" : "h1");
    if (!prefaceSoFar) socket.resume();
  };
  socket.on("data", onData);
  socket.on("error", () => socket.destroy());
}
