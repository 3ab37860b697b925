// One port for HTTP/1.1 and cleartext HTTP/2 (h2c). Node's http2 server with allowHTTP1 serves
// HTTP/1.1 only over TLS, so a net server peeks at each connection's first bytes and hands the socket
// to the http2 server when they are the HTTP/2 preface, else to the http server.
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { App } from "./app.js";

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

export interface Listener {
  port: number;
  /** Stops accepting, lets in-flight calls finish (up to graceMs), then closes every connection. */
  close(graceMs?: number): Promise<void>;
}

export async function listen(app: App, port: number, host = "127.0.0.1"): Promise<Listener> {
  const h1 = http.createServer({ keepAliveTimeout: 5000 }, app.handler);
  const h2 = http2.createServer({}, app.handler);
  const sessions = new Set<http2.Http2Session>();
  h2.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });

  const server = net.createServer((socket) => routeConnection(socket, h1, h2));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as net.AddressInfo;

  let closing: Promise<void> | undefined;
  return {
    port: address.port,
    close(graceMs = 10_000) {
      closing ??= (async () => {
        app.beginShutdown();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        h1.closeIdleConnections();
        for (const session of sessions) session.close(); // GOAWAY: open streams may finish
        const deadline = Date.now() + graceMs;
        while (app.inFlight() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        h1.closeAllConnections();
        for (const session of sessions) session.destroy();
        await closed;
      })();
      return closing;
    },
  };
}

function routeConnection(socket: net.Socket, h1: http.Server, h2: http2.Http2Server): void {
  let head = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const n = Math.min(head.length, PREFACE.length);
    const prefaceSoFar = head.subarray(0, n).equals(PREFACE.subarray(0, n));
    if (prefaceSoFar && head.length < PREFACE.length) return; // wait for the rest of the preface
    socket.off("data", onData);
    socket.pause();
    socket.unshift(head);
    if (prefaceSoFar) {
      // http2 reads the unshifted bytes itself when it takes the socket over; resuming here would
      // emit them as "data" events to no one.
      h2.emit("connection", socket);
    } else {
      h1.emit("connection", socket);
      socket.resume();
    }
  };
  socket.on("data", onData);
  socket.on("error", () => socket.destroy());
}
