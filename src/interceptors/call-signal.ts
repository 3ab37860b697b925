// The abort signal of one call. It fires when the call's deadline passes (the server's request
// timeout, or the caller's own `grpc-timeout`/`connect-timeout-ms` when shorter) or when the caller
// goes away; the call chain (call-outcome.ts) then answers DEADLINE_EXCEEDED at once and handlers
// stop their long work. A timer cannot fire while work holds the event loop (SQLite answers
// synchronously, so a report may run to its end without yielding): the chain also asks the clock
// (CallDeadline) where a handler's work ends.
import type { IncomingMessage } from "node:http";
import http2, { Http2ServerResponse, type Http2ServerRequest } from "node:http2";
import { Code, ConnectError, createContextKey, type HandlerContext } from "@connectrpc/connect";
import { parseTimeout as parseConnectTimeout } from "@connectrpc/connect/protocol-connect";
import { parseTimeout as parseGrpcTimeout } from "@connectrpc/connect/protocol-grpc";
import { AppError, ErrorCode, invalidParameter } from "../domain/errors.js";
import type { HttpRequest, HttpResponse } from "../rest/envelope.js";
import { errorEntry } from "../error-table.js";
import type { CallLog } from "./call-log.js";
import { toConnectError } from "./connect-errors.js";

/**
 * A signal that aborts with DEADLINE_EXCEEDED after `timeoutMs`, or with CANCELED when the response
 * closes unanswered. Its timer ends with the response, so a flood of short calls holds no timers. A
 * request body still arriving at the deadline, or when the answer has gone out, must not outlive the
 * answer: see endRequestAfterAnswer. Nor may an answer its caller does not take: one still unwritten
 * CUT_OFF_MS after the deadline (an export whose caller stopped reading, its writes waiting on a full
 * connection) is cut off, as a stream is at its deadline (usage-export.md).
 */
export function responseSignal(req: HttpRequest, res: HttpResponse, deadline: CallDeadline, log: CallLog): AbortSignal {
  const controller = new AbortController();
  let cutOff: NodeJS.Timeout | undefined;
  const timer = setTimeout(() => {
    controller.abort(deadlineExceeded(deadline.timeoutMs));
    if (!req.complete) endRequestAfterAnswer(res);
    cutOff = setTimeout(() => {
      if (res instanceof Http2ServerResponse ? res.stream.writableFinished : res.writableFinished) return;
      log.code ??= ErrorCode.DEADLINE_EXCEEDED;
      // HTTP/2: RST_STREAM CANCEL, which a client ends the stream on at once (after NO_ERROR, only once it has read what came).
      if (res instanceof Http2ServerResponse) res.stream.close(http2.constants.NGHTTP2_CANCEL);
      else res.destroy();
    }, CUT_OFF_MS);
  }, deadline.timeoutMs);
  res.once("close", () => {
    clearTimeout(timer);
    clearTimeout(cutOff);
    if (!controller.signal.aborted && !wasAnswered(res)) controller.abort(new AppError(ErrorCode.CANCELED, "the caller cancelled the call"));
  });
  // HTTP/2, answered before its body was all sent (refused as too large, say): the rest is not waited for, nor the deadline; the stream
  // is reset after the answer (whose end is its stream's "finish": the response's comes only once the stream has closed). HTTP/1.1
  // closes the connection instead (see app.ts).
  if (res instanceof Http2ServerResponse) {
    res.stream.once("finish", () => {
      if (!req.complete) endRequestAfterAnswer(res);
    });
  }
  return controller.signal;
}

/** When a call's deadline passes (performance.now()), and the time it was given. */
export interface CallDeadline {
  passesAt: number;
  timeoutMs: number;
}

export function callDeadline(timeoutMs: number): CallDeadline {
  return { passesAt: performance.now() + timeoutMs, timeoutMs };
}

/** Throws DEADLINE_EXCEEDED if the deadline has passed, whether or not its timer could fire yet. */
export function throwIfPassed(deadline: CallDeadline): void {
  if (performance.now() >= deadline.passesAt) throw deadlineExceeded(deadline.timeoutMs);
}

/** Whether the whole answer was handed to the connection (false: the caller reset or closed first). */
export function wasAnswered(res: HttpResponse): boolean {
  // Node counts an HTTP/2 response as finished even when the client reset its stream before the
  // answer had gone out (RST_STREAM CANCEL): the stream's close code tells.
  return res instanceof Http2ServerResponse ? res.writableEnded && !res.stream.aborted && (res.stream.rstCode ?? 0) === http2.constants.NGHTTP2_NO_ERROR : res.writableFinished;
}

/**
 * How a call ended, as the access log and the metrics tell it: its answer's status and code. Unanswered (or cut off mid-answer, its
 * status sent): UNAVAILABLE when the shutdown cut it, else its own failure's code (DEADLINE_EXCEEDED when its deadline cut an export, a
 * store fault's), else CANCELED and 499 (the caller went away first).
 */
export function endedAs(res: HttpResponse, log: CallLog): { status: number; code: number | undefined } {
  if (wasAnswered(res)) return { status: res.statusCode, code: log.code };
  const code = log.cutAtShutdown ? ErrorCode.UNAVAILABLE : log.code ?? ErrorCode.CANCELED;
  if (code === ErrorCode.CANCELED) return { status: 499, code };
  return { status: res.headersSent ? res.statusCode : errorEntry(code).httpStatus, code };
}

/** The AppError an aborted call ends with, whichever signal aborted it. */
export function abortError(reason: unknown): AppError {
  if (reason instanceof AppError) return reason;
  if (reason instanceof ConnectError && reason.code === Code.DeadlineExceeded) return deadlineExceeded();
  return new AppError(ErrorCode.CANCELED, "the caller cancelled the call");
}

/** Settles as `work` does, or rejects with the abort's AppError as soon as `signal` aborts. */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.catch(() => {}); // its outcome no longer matters
    return Promise.reject(abortError(signal.reason));
  }
  return new Promise<T>((resolve, reject) => {
    // Bound, not a named closure: the loader (tsx, keepNames) defines a name on each one made.
    const onAbort = rejectAborted.bind(undefined, signal, reject);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

function rejectAborted(signal: AbortSignal, reject: (error: AppError) => void): void {
  reject(abortError(signal.reason));
}

/**
 * The caller's own deadline, by its protocol's header: `grpc-timeout` on gRPC and gRPC-Web (by the content type), else
 * `connect-timeout-ms` (Connect, and REST takes it too). `problem` says why a header is no deadline, naming it.
 */
function callerTimeout(contentType: string | undefined, header: (name: string) => string | undefined): { timeoutMs?: number; problem?: string } {
  if (/^application\/grpc/i.test(contentType ?? "")) {
    const grpc = header("grpc-timeout");
    const parsed = grpc === undefined ? {} : parseGrpcTimeout(grpc, Number.MAX_SAFE_INTEGER);
    return parsed.error ? { problem: "grpc-timeout: expected at most 8 digits and a unit (H, M, S, m, u or n), e.g. 2500m" } : { timeoutMs: parsed.timeoutMs };
  }
  const connect = header("connect-timeout-ms");
  const parsed = connect === undefined ? {} : parseConnectTimeout(connect, Number.MAX_SAFE_INTEGER);
  return parsed.error ? { problem: "connect-timeout-ms: expected a whole number of milliseconds (at most 10 digits)" } : { timeoutMs: parsed.timeoutMs };
}

const nodeHeader = (req: HttpRequest) => (name: string) => {
  const value = req.headers[name];
  return value === undefined ? undefined : String(value);
};

/** The caller's own deadline in milliseconds, when the request carries a valid one (an invalid one is refused: callerTimeoutProblem). */
export const callerTimeoutMs = (req: HttpRequest): number | undefined => callerTimeout(req.headers["content-type"], nodeHeader(req)).timeoutMs;

/** Why the caller's deadline header is no deadline, naming it; undefined when it is absent or valid. */
export const callerTimeoutProblem = (header: Headers): string | undefined =>
  callerTimeout(header.get("content-type") ?? undefined, (name) => header.get(name) ?? undefined).problem;

/**
 * Refuses (4001) a deadline header that is no deadline, for the transports the service reads itself (REST, Connect JSON); the
 * caller's valid deadline is already the call's (app.ts makes the signal from the shorter of it and the server's).
 */
export function refuseUnreadableTimeout(req: HttpRequest): void {
  const { problem } = callerTimeout(req.headers["content-type"], nodeHeader(req));
  if (problem !== undefined) throw invalidParameter(problem);
}

/**
 * For calls the Connect adapter serves: it reads a whole request body before the handler runs and
 * does not watch the deadline meanwhile. A body still incomplete when the call's signal aborts (a
 * stalled or hostile client) is ended with DEADLINE_EXCEEDED, which the adapter answers.
 */
export function endIncompleteBodyAtDeadline(req: HttpRequest, signal: AbortSignal, log: CallLog): void {
  const onAbort = () => {
    if (req.complete) return;
    const error = abortError(signal.reason);
    log.code = error.code;
    // A reader of the body gets the error from the stream. Before there is one (the call is still being authorized), it must not
    // reach the process as an unheard 'error' event, which would end it.
    req.once("error", () => {});
    req.destroy(toConnectError(error, log.requestId));
  };
  signal.addEventListener("abort", onAbort, { once: true });
  req.once("end", () => signal.removeEventListener("abort", onAbort));
}

/**
 * A call that ended (at its deadline, or answered) while its client was still sending must not keep the connection
 * waiting for the rest of the body. HTTP/2 leaves the stream half open (Node closes it only when no
 * trailers were sent and the body was never read): the answer gets a moment to go out, then
 * RST_STREAM NO_ERROR (RFC 9113 section 8.1) frees the stream. HTTP/1.1 answers with
 * `Connection: close`, so Node closes the connection once the answer is sent.
 */
function endRequestAfterAnswer(res: HttpResponse): void {
  if (!(res instanceof Http2ServerResponse)) return closeAfterAnswer(res);
  const stream = res.stream;
  const timer = setTimeout(() => {
    stream.close(http2.constants.NGHTTP2_NO_ERROR);
    // Closed without an error, the stream would wait for its request body to be read to its end: what came unread is dropped.
    stream.destroy();
  }, ANSWER_GRACE_MS);
  stream.once("close", () => clearTimeout(timer));
}

const ANSWER_GRACE_MS = 100;
/** How long after its deadline a call's answer may still take to be written. */
const CUT_OFF_MS = 1000;

/** Whether the request says a body comes: a length above 0, or chunks. */
export function mayHaveBody(req: HttpRequest): boolean {
  return Number(req.headers["content-length"] ?? 0) > 0 || req.headers["transfer-encoding"] !== undefined;
}

/** HTTP/1.1: the connection closes after this answer (HTTP/2 sessions get GOAWAY or a stream reset instead). */
export function closeAfterAnswer(res: HttpResponse): void {
  if (!(res instanceof Http2ServerResponse) && !res.headersSent) res.setHeader("connection", "close");
}

/**
 * HTTP/1.1, a request whose body may still be coming when its answer closes the connection: the close is made in stages (RFC 9112
 * section 9.6). Node would close the socket as soon as the answer is out, and a client still writing its body (connect-node writes it
 * after the headers) then meets a reset, which can erase the answer it had not read yet ("write EPIPE" instead of a 401). The
 * server's side is ended instead, what still comes is read and dropped, and the socket is closed once the client ends its side, or
 * after LINGER_MS or LINGER_BYTES.
 */
export function closeInStages(req: IncomingMessage): void {
  const socket = req.socket;
  const closeNow = Object.getPrototypeOf(socket).destroySoon as () => void;
  // Node calls destroySoon when an answer that closes the connection is out; the request of the moment decides how.
  socket.destroySoon = () => {
    if (req.complete || socket.destroyed) return closeNow.call(socket);
    // Requests the client sends on after this are parsed by Node still: none may be carried out (RFC 9112 section 9.6).
    (socket as ClosingSocket)[CLOSING] = true;
    socket.end();
    let read = 0;
    const close = () => socket.destroy();
    const timer = setTimeout(close, LINGER_MS);
    socket.on("data", (chunk: Buffer) => {
      read += chunk.length;
      if (read > LINGER_BYTES) close();
    });
    socket.once("end", close);
    socket.once("close", () => clearTimeout(timer));
  };
}

const CLOSING = Symbol("closingInStages");
type ClosingSocket = IncomingMessage["socket"] & { [CLOSING]?: true };

/** Whether the request came on a connection already closing in stages: it is not to be carried out, nor answered. */
export const cameWhileClosing = (req: HttpRequest): boolean => (req.socket as ClosingSocket | undefined)?.[CLOSING] === true;

/** How long, and how much, a connection closed under an incomplete body is still read: a body sent at once is in by then. */
const LINGER_MS = 2000;
const LINGER_BYTES = 4 * 1024 * 1024;

const deadlineExceeded = (timeoutMs?: number) =>
  new AppError(ErrorCode.DEADLINE_EXCEEDED, timeoutMs === undefined ? "deadline exceeded" : `deadline exceeded: the call took longer than ${timeoutMs} ms`);

const key = Symbol("callSignal");
type WithSignal = (IncomingMessage | Http2ServerRequest) & { [key]?: { signal: AbortSignal; deadline: CallDeadline } };

export function attachCallSignal(req: IncomingMessage | Http2ServerRequest, signal: AbortSignal, deadline: CallDeadline): void {
  (req as WithSignal)[key] = { signal, deadline };
}

export function callSignalOf(req: IncomingMessage | Http2ServerRequest): AbortSignal {
  return (req as WithSignal)[key]?.signal ?? new AbortController().signal;
}

export function callDeadlineOf(req: IncomingMessage | Http2ServerRequest): CallDeadline {
  return (req as WithSignal)[key]?.deadline ?? NO_DEADLINE;
}

const NO_DEADLINE: CallDeadline = Object.freeze({ passesAt: Infinity, timeoutMs: Infinity });

/**
 * The call's signal: the request's (the server's request timeout, set by app.ts), joined with the
 * transport's own (the caller's deadline) by call-outcome.ts before the handler runs.
 */
export const callSignalKey = createContextKey<AbortSignal>(new AbortController().signal, { description: "call signal" });

/** The call's deadline (the shorter of the server's and the caller's), for the chain's own check of the clock. */
export const callDeadlineKey = createContextKey<CallDeadline>(NO_DEADLINE, { description: "call deadline" });

/** Aborts when the call's deadline passes or its caller goes away: a handler's long work checks it. */
export function signalOf(context: HandlerContext): AbortSignal {
  return context.values.get(callSignalKey);
}

/** Throws the call's end if it has ended: its signal aborted, or its deadline passed though the signal's timer had no turn yet. */
export function throwIfCallEnded(context: HandlerContext): void {
  const signal = signalOf(context);
  if (signal.aborted) throw abortError(signal.reason);
  throwIfPassed(context.values.get(callDeadlineKey));
}
