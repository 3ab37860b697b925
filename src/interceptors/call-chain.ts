// The chain every business call runs, whatever its transport: its outcome (call-outcome.ts), then
// authorization and the rate limit (auth.ts), then validation (validation.ts), then the handler. The
// Connect router registers it with every business service (routes.ts). The REST facade and the Connect
// JSON path run it in process here, through connect-es's own invocation of a handler with its
// interceptors, so headers, deadlines and errors are decided by one implementation however a call came.
// (connect-es marks those two functions internal to its protocol handlers: package.json pins its
// version exactly, and test/e2e checks every transport against the same answers.)
import type { DescMethod, DescMethodServerStreaming, DescMethodUnary, Message } from "@bufbuild/protobuf";
import { ConnectError, createContextValues, type ContextValues, type HandlerContext, type Interceptor, type MethodImplSpec } from "@connectrpc/connect";
import { createAsyncIterable, invokeUnaryImplementation, transformInvokeImplementation, type UniversalHandler, type UniversalServerRequest } from "@connectrpc/connect/protocol";
import type { RateLimits } from "../domain/rate-limits.js";
import type { ServedService } from "../routes.js";
import type { StoreFault } from "../storage/store-faults.js";
import { CallAuthorizer, type Authenticator } from "./auth.js";
import { callLogKey, procedureOf, type CallLog } from "./call-log.js";
import { CallOutcome } from "./call-outcome.js";
import { callDeadlineKey, callSignalKey, type CallDeadline } from "./call-signal.js";
import { refusedBody, withoutBodyHeaders } from "./rpc-body-check.js";
import { validationInterceptor } from "./validation.js";

/** The methods a business service serves: unary and server-streaming. */
export type ServedMethod = DescMethodUnary | DescMethodServerStreaming;

/** A call the transport runs in process. */
export interface LocalCallInit {
  log: CallLog;
  /** See call-signal.ts. */
  signal: AbortSignal;
  deadline: CallDeadline;
  authorization: string | undefined;
  /** "rest", or "connect" for the Connect JSON path. */
  protocolName: string;
  requestMethod: string;
  url: string;
}

export class CallChain {
  readonly interceptors: Interceptor[];
  private readonly outcome: CallOutcome;
  private readonly authorizer: CallAuthorizer;
  private readonly specs = new Map<DescMethod, MethodImplSpec>();

  /** Every business method must declare its access (auth.ts): one without fails the start. */
  constructor(services: readonly ServedService[], authenticator: Authenticator, rateLimits: RateLimits,
    storeFaultOf?: (error: unknown) => StoreFault | undefined) {
    this.outcome = new CallOutcome(storeFaultOf);
    this.authorizer = new CallAuthorizer(services.map((s) => s.service), authenticator, rateLimits);
    this.interceptors = [this.outcome.interceptor, this.authorizer.interceptor, validationInterceptor];
    for (const { spec } of services) for (const method of Object.values(spec.methods)) this.specs.set(method.method, method);
  }

  /** Whether `method` is a business method, which the chain runs (reflection and health are not). */
  serves(method: DescMethod): boolean {
    return this.specs.has(method);
  }

  /**
   * Authorizes a call from its headers before its body is read (authorizingFirst); the chain then skips this step. The caller's
   * ConnectError, recorded in the call's log, or undefined when the call may go on.
   */
  async authorizeFirst(method: DescMethod, header: Headers, values: ContextValues): Promise<ConnectError | undefined> {
    try {
      await this.authorizer.authorize(method, header, values);
      return undefined;
    } catch (error) {
      const log = values.get(callLogKey)!; // the adapter's context values carry it (app.ts)
      log.procedure = procedureOf(method);
      return this.outcome.failure(error, log);
    }
  }

  /**
   * A call of a business method, to run in process. Its context is the transport's call as it is: its
   * signal is the call's (it ends at the deadline or when the caller goes away, call-signal.ts), so a
   * call costs no linked AbortControllers or deadline timer of its own, and no abort when it ends.
   */
  open(method: ServedMethod, init: LocalCallInit): LocalCall {
    const spec = this.specs.get(method);
    if (!spec) throw new Error(`${method.parent.typeName}.${method.name} is not a served business method`);
    const requestHeader = new Headers();
    if (init.authorization !== undefined) requestHeader.set("authorization", init.authorization);
    const context: HandlerContext = {
      service: method.parent,
      method,
      protocolName: init.protocolName,
      requestMethod: init.requestMethod,
      url: init.url,
      signal: init.signal,
      timeoutMs: noTimeout,
      requestHeader,
      responseHeader: new Headers(),
      responseTrailer: new Headers(),
      values: createContextValues().set(callLogKey, init.log).set(callSignalKey, init.signal).set(callDeadlineKey, init.deadline),
    };
    return new LocalCall(spec, context, init.log, this.interceptors, this.authorizer, this.outcome);
  }
}

/**
 * Wraps the handler of a business method that connect-es serves (every RPC protocol but uncompressed Connect JSON) so that the call
 * is authorized from its headers before connect-es reads and decodes its body, as the in-process transports do: a caller without a
 * valid token gets its error with the body unread. `checked` runs an authorized call; `raw` answers a refused one, its body an error
 * (the checks of `checked` would read it). Other handlers (reflection, health) are returned as they are.
 */
export function authorizingFirst(chain: CallChain, checked: UniversalHandler, raw: UniversalHandler): UniversalHandler {
  if (!chain.serves(raw.method)) return checked;
  const authorizing = async (req: UniversalServerRequest) => {
    const refused = await chain.authorizeFirst(raw.method, req.header, req.contextValues!);
    return refused ? raw({ ...req, header: withoutBodyHeaders(req.header), body: refusedBody(refused) }) : checked(req);
  };
  return Object.assign(authorizing, checked);
}

/** The call's deadline is its signal's (the transport's); connect-es's own timeout is not used in process. */
const noTimeout = () => undefined;

export class LocalCall {
  constructor(private readonly spec: MethodImplSpec, private readonly context: HandlerContext,
    private readonly log: CallLog, private readonly interceptors: Interceptor[], private readonly authorizer: CallAuthorizer,
    private readonly outcome: CallOutcome) {}

  /**
   * Authorizes the call by itself, for a transport that reads the body only then: a caller without a
   * valid token never has it read. The chain then skips this step. Throws the caller's ConnectError.
   */
  async authorize(): Promise<void> {
    this.log.procedure = procedureOf(this.spec.method);
    try {
      await this.authorizer.authorize(this.spec.method, this.context.requestHeader, this.context.values);
    } catch (error) {
      throw this.outcome.failure(error, this.log);
    }
  }

  /** The caller's ConnectError for a failure before the chain ran (a body that cannot be read), recorded in the log. */
  failure(error: unknown): ConnectError {
    return this.outcome.failure(error, this.log);
  }

  /** Headers of the answer, as the handler and the chain set them. */
  get responseHeader(): Headers {
    return this.context.responseHeader;
  }

  /** Runs a unary method's chain: its response message, or the caller's ConnectError. */
  unary(request: Message): Promise<Message> {
    const spec = this.spec;
    if (spec.kind !== "unary") throw new Error(`${spec.method.name} is not unary`);
    return invokeUnaryImplementation(spec, this.context, request, this.interceptors);
  }

  /** Runs a server-streaming method's chain: its messages; an error ends them with the caller's ConnectError. */
  async *stream(request: Message): AsyncGenerator<Message> {
    const spec = this.spec;
    if (spec.kind !== "server_streaming") throw new Error(`${spec.method.name} is not server-streaming`);
    yield* transformInvokeImplementation(spec, this.context, this.interceptors)(createAsyncIterable([request]));
  }
}
