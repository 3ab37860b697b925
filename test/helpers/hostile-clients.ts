// Clients that misbehave on purpose, for the end-to-end tests and the hostile benchmark: a raw TCP
// connection that sends what it is told (a slowloris sends headers a few bytes at a time, or nothing),
// and an HTTP/2 rapid-reset flood (streams opened and cancelled at once).
import http2 from "node:http2";
import net from "node:net";

export interface RawConnection {
  socket: net.Socket;
  connected: Promise<void>;
  /** Everything the server has sent so far, as text. */
  received(): string;
}

export function rawHttp(port: number, host = "127.0.0.1"): RawConnection {
  const socket = net.connect(port, host);
  let text = "";
  socket.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
  socket.on("error", () => {});
  const connected = new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  return { socket, connected, received: () => text };
}

/** A slowloris: sends `head` one byte every `everyMs` and never finishes. Returns a stop function. */
export function slowloris(conn: RawConnection, head = "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: ", everyMs = 1_000): () => void {
  let i = 0;
  const timer = setInterval(() => {
    if (conn.socket.destroyed) return clearInterval(timer);
    conn.socket.write(head[i % head.length]!);
    i++;
  }, everyMs);
  return () => clearInterval(timer);
}

/** Resolves when the socket closes (rejects after `timeoutMs`), with the time it took. */
export function socketClosed(socket: net.Socket, timeoutMs: number): Promise<{ ms: number }> {
  return closedWithin(socket, timeoutMs, () => socket.destroyed && socket.closed);
}

/** Resolves when the HTTP/2 session closes (rejects after `timeoutMs`), with the time it took. */
export function sessionClosed(session: http2.ClientHttp2Session, timeoutMs: number): Promise<{ ms: number }> {
  return closedWithin(session, timeoutMs, () => session.closed && session.destroyed);
}

/** When an HTTP/2 stream (or any emitter of "close") closes, within `timeoutMs`. */
export const closedWithinMs = (emitter: NodeJS.EventEmitter & { closed?: boolean }, timeoutMs: number) => closedWithin(emitter, timeoutMs, () => emitter.closed === true);

function closedWithin(emitter: NodeJS.EventEmitter, timeoutMs: number, already: () => boolean): Promise<{ ms: number }> {
  const started = performance.now();
  if (already()) return Promise.resolve({ ms: 0 });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`still open after ${timeoutMs} ms`)), timeoutMs);
    emitter.once("close", () => {
      clearTimeout(timer);
      resolve({ ms: performance.now() - started });
    });
  });
}

export interface FloodResult {
  /** Streams opened and cancelled. */
  streams: number;
  /** The GOAWAY error codes the server sent, one per session it ended. */
  goaways: number[];
  /** Sessions opened (a new one after each GOAWAY). */
  sessions: number;
}

/** An h2c session from a given local address (Node's typings of http2.connect lack `localAddress`). */
export function connectFrom(baseUrl: string, localAddress?: string): http2.ClientHttp2Session {
  if (!localAddress) return http2.connect(baseUrl);
  const { hostname, port } = new URL(baseUrl);
  return http2.connect(baseUrl, { createConnection: () => net.connect({ host: hostname, port: Number(port), localAddress }) });
}

export interface FloodOptions {
  /** Streams opened and cancelled per turn of the event loop (default 50). */
  batch?: number;
  /** The attacker's own address, e.g. 127.0.0.2 (any 127.x.y.z is this host on Linux). */
  localAddress?: string;
}

/**
 * An HTTP/2 rapid-reset flood for `durationMs`: on each session, `batch` streams are opened with
 * `headers` and cancelled (RST_STREAM CANCEL) at once, again and again; when the server ends the
 * session (or refuses the connection) a new one is opened.
 */
export async function rapidResetFlood(baseUrl: string, headers: http2.OutgoingHttpHeaders, durationMs: number,
  { batch = 50, localAddress }: FloodOptions = {}): Promise<FloodResult> {
  const result: FloodResult = { streams: 0, goaways: [], sessions: 0 };
  const until = Date.now() + durationMs;
  while (Date.now() < until) {
    result.sessions++;
    const session = connectFrom(baseUrl, localAddress);
    session.on("error", () => {});
    session.once("goaway", (code) => result.goaways.push(code));
    await new Promise<void>((resolve) => {
      session.once("close", resolve);
      session.once("connect", function burst() {
        if (session.closed || session.destroyed || Date.now() >= until) return session.destroy();
        for (let i = 0; i < batch && !session.closed && !session.destroyed; i++) {
          try {
            const stream = session.request(headers, { endStream: true });
            stream.on("error", () => {});
            stream.close(http2.constants.NGHTTP2_CANCEL);
            result.streams++;
          } catch {
            return session.destroy(); // the session ended under us (GOAWAY)
          }
        }
        setImmediate(burst);
      });
    });
  }
  return result;
}

/** The access-log lines among a server's log lines. */
export function accessLines(logs: readonly string[]): Record<string, unknown>[] {
  return logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === "request");
}
