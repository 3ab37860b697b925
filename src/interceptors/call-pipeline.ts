// The one path every business call takes, whatever its transport: authorize by the method's declared
// access, count the call against the caller's rate limit, validate by the proto rules, run the handler,
// record the outcome for the access log. A unary method answers once (`run`); a server-streaming one
// answers with a sequence of messages (`stream`), each step through the same error mapping.
// The Connect services (bindService) and the REST facade both call them.
import { getOption, type DescMethod, type DescMethodServerStreaming, type DescMethodUnary, type DescService, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { access as accessOption, type MethodAccess } from "../../gen/enterprise_admin/v1/options_pb.js";
import { AppError, ErrorCode } from "../domain/errors.js";
import type { Authenticator, Principal } from "./auth.js";
import { callLogKey, type CallLog } from "./call-log.js";
import { abortError, callSignalKey, untilAborted } from "./call-signal.js";
import { toConnectError } from "./connect-errors.js";
import type { RateLimits } from "../domain/rate-limits.js";
import { validateRequest } from "./validation.js";
import { storeFaultError } from "./store-faults.js";
import type { StoreFault } from "../storage/store-faults.js";

export interface CallContext {
  requestId: string;
  /** Undefined only for public methods. */
  principal: Principal | undefined;
  /** The peer's address, when the transport knows it. */
  clientAddress: string | undefined;
  /** Aborts when the call's deadline passes or its caller goes away: long work checks it. */
  signal: AbortSignal;
  /** Headers of the answer, sent by every transport (set them before a stream's first message). */
  responseHeader: Headers;
}

export interface AuthedCallContext extends CallContext {
  principal: Principal;
}

export interface CallMeta {
  authorization: string | null | undefined;
  log: CallLog;
  /** See call-signal.ts. */
  signal: AbortSignal;
  /** The transport's response headers, when it has its own (Connect); else the pipeline makes them. */
  responseHeader?: Headers;
}

/** The methods a pipeline serves: unary and server-streaming. */
export type ServedMethod = DescMethodUnary | DescMethodServerStreaming;

type ServedMethods<S extends DescService> = {
  [K in keyof S["method"] as S["method"][K] extends ServedMethod ? K : never]: S["method"][K];
};

/** A service's handlers: plain functions of the request and the caller; a stream's yields its messages. */
export type Handlers<S extends DescService> = {
  [K in keyof ServedMethods<S>]: ServedMethods<S>[K] extends DescMethodUnary<infer I, infer O>
    ? (request: MessageShape<I>, call: AuthedCallContext) => Promise<MessageInitShape<O>>
    : ServedMethods<S>[K] extends DescMethodServerStreaming<infer I, infer O>
      ? (request: MessageShape<I>, call: AuthedCallContext) => AsyncIterable<MessageInitShape<O>>
      : never;
};

type UnaryHandler<I extends DescMethodUnary> = (request: MessageShape<I["input"]>, call: AuthedCallContext) => Promise<MessageInitShape<I["output"]>>;
type StreamHandler<I extends DescMethodServerStreaming> = (request: MessageShape<I["input"]>, call: AuthedCallContext) => AsyncIterable<MessageInitShape<I["output"]>>;

const isServed = (method: DescMethod): method is ServedMethod => method.methodKind === "unary" || method.methodKind === "server_streaming";

/** The access rule of a method; a business method without one is a bug caught at start-up. */
export function methodAccess(method: DescMethod): MethodAccess {
  const access = getOption(method, accessOption);
  if (!access.public && !access.anyToken && access.permission === "") {
    throw new Error(`${method.parent.typeName}.${method.name} declares no (enterprise_admin.v1.access) option`);
  }
  return access;
}

/** The outcome of `authorize`: the caller, undefined for a public method. */
export interface Authorized {
  principal: Principal | undefined;
}

export class CallPipeline {
  constructor(
    private readonly authenticator: Authenticator,
    private readonly rateLimits: RateLimits,
    /** The busy or full store an error is, if it is one (Database.faultOf): the caller may retry it. */
    private readonly storeFaultOf: (error: unknown) => StoreFault | undefined = () => undefined,
  ) {}

  /**
   * The first step of `run` on its own, for transports that read the request body themselves:
   * they authorize before parsing, so a caller without a valid token never has its body read.
   */
  authorize(method: ServedMethod, access: MethodAccess, meta: CallMeta): Promise<Authorized> {
    return this.recorded(method, meta.log, async () => {
      // A stream opened and reset at once (a rapid-reset flood) is seen reset only after the I/O
      // that carried both frames: wait that out, and spend no database work on a call already gone.
      await new Promise(setImmediate);
      if (meta.signal.aborted) throw abortError(meta.signal.reason);
      const principal = await this.authenticator.authorize(meta.authorization, access);
      if (principal) {
        meta.log.enterpriseId = principal.enterpriseId;
        this.rateLimits.admitCall(principal);
      }
      return { principal };
    });
  }

  /** Authorizes (unless `authorized` is given), validates and runs the handler. */
  async run<I extends DescMethodUnary>(method: I, access: MethodAccess, request: MessageShape<I["input"]>, meta: CallMeta,
    handler: UnaryHandler<I>, authorized?: Authorized): Promise<MessageInitShape<I["output"]>> {
    const call = await this.begin(method, access, request, meta, authorized);
    // The answer is the deadline's error the moment it passes, whether or not the handler has stopped.
    return this.recorded(method, meta.log, () => untilAborted(handler(request, call), meta.signal));
  }

  /**
   * As `run`, for a server-streaming method: the handler's messages, each awaited under the call's
   * deadline and through the same error mapping. Ending the iteration early ends the handler's.
   */
  async *stream<I extends DescMethodServerStreaming>(method: I, access: MethodAccess, request: MessageShape<I["input"]>, meta: CallMeta,
    handler: StreamHandler<I>, authorized?: Authorized): AsyncGenerator<MessageInitShape<I["output"]>> {
    const call = await this.begin(method, access, request, meta, authorized);
    const messages = handler(request, call)[Symbol.asyncIterator]();
    let done = false;
    try {
      for (;;) {
        const next = await this.recorded(method, meta.log, () => untilAborted(messages.next(), meta.signal));
        if (next.done) {
          done = true;
          return;
        }
        yield next.value;
      }
    } finally {
      // Not awaited: a handler stopped mid-step finishes that step (it checks the call's signal) first.
      if (!done) messages.return?.().catch(() => {});
    }
  }

  /** Authorizes (unless already done) and validates: the call's context, for the handler. */
  private async begin(method: ServedMethod, access: MethodAccess, request: MessageShape<ServedMethod["input"]>, meta: CallMeta,
    authorized: Authorized | undefined): Promise<AuthedCallContext> {
    const { principal } = authorized ?? await this.authorize(method, access, meta);
    return this.recorded(method, meta.log, async () => {
      validateRequest(method.input, request);
      const { requestId, clientAddress } = meta.log;
      return { requestId, principal: principal!, clientAddress, signal: meta.signal, responseHeader: meta.responseHeader ?? new Headers() };
    });
  }

  /** Records the procedure and the outcome for the access log; a non-AppError becomes "internal error". */
  private async recorded<T>(method: ServedMethod, log: CallLog, step: () => Promise<T>): Promise<T> {
    log.procedure = `/${method.parent.typeName}/${method.name}`;
    try {
      return await step();
    } catch (error) {
      if (error instanceof AppError) {
        log.code = error.code;
        throw error;
      }
      const fault = this.storeFaultOf(error);
      if (fault) throw storeFaultError(fault, log);
      log.code = ErrorCode.INTERNAL;
      log.cause = error;
      throw new AppError(ErrorCode.INTERNAL, "internal error");
    }
  }
}

type ConnectContext = { requestHeader: Headers; responseHeader: Headers; values: { get: Function }; signal: AbortSignal };

/** Builds the Connect implementation of a service from its handlers, through the pipeline. */
export function bindService<S extends DescService>(service: S, handlers: Handlers<S>, pipeline: CallPipeline): Partial<ServiceImpl<S>> {
  const impl: Record<string, unknown> = {};
  const metaOf = (ctx: ConnectContext): CallMeta => ({
    authorization: ctx.requestHeader.get("authorization"),
    log: ctx.values.get(callLogKey),
    // Connect's signal carries the caller's deadline; the request's own carries the server's timeout.
    signal: AbortSignal.any([ctx.signal, ctx.values.get(callSignalKey) as AbortSignal]),
    responseHeader: ctx.responseHeader,
  });
  for (const { method, access, handler } of endpointsOf([{ service, handlers }])) {
    impl[method.localName] = method.methodKind === "unary"
      ? async (request: never, ctx: ConnectContext) => {
        const meta = metaOf(ctx);
        try {
          return await pipeline.run(method, access, request, meta, handler as never);
        } catch (error) {
          throw toConnectError(error as AppError, meta.log.requestId);
        }
      }
      : async function* (request: never, ctx: ConnectContext) {
        const meta = metaOf(ctx);
        try {
          yield* pipeline.stream(method, access, request, meta, handler as never);
        } catch (error) {
          throw toConnectError(error as AppError, meta.log.requestId);
        }
      };
  }
  return impl as Partial<ServiceImpl<S>>;
}

/** A served service and its handlers, as routes.ts lists them. */
export interface ServedService {
  service: DescService;
  handlers: object;
}

/** One served method with what every transport needs to run it through the pipeline. */
export interface Endpoint {
  method: ServedMethod;
  access: MethodAccess;
  handler: (request: never, call: never) => Promise<unknown> | AsyncIterable<unknown>;
}

/**
 * The unary and server-streaming methods of the served services; a method without a handler or an
 * access rule fails the start.
 */
export function endpointsOf(services: readonly ServedService[]): Endpoint[] {
  const endpoints: Endpoint[] = [];
  for (const { service, handlers } of services) {
    for (const method of service.methods) {
      if (!isServed(method)) continue;
      const handler = (handlers as Record<string, Endpoint["handler"]>)[method.localName];
      if (!handler) throw new Error(`no handler for ${service.typeName}.${method.name}`);
      endpoints.push({ method, access: methodAccess(method), handler });
    }
  }
  return endpoints;
}
