// The one path every business call takes, whatever its transport: authorize by the method's declared
// access, validate by the proto rules, run the handler, record the outcome for the access log.
// The Connect services (bindService) and the REST facade both call `run`.
import { getOption, type DescMethodUnary, type DescService, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { access as accessOption, type MethodAccess } from "../../gen/enterprise_admin/v1/options_pb.js";
import { AppError, ErrorCode } from "../domain/errors.js";
import type { Authenticator, Principal } from "./auth.js";
import { callLogKey, type CallLog } from "./call-log.js";
import { toConnectError } from "./connect-errors.js";
import { validateRequest } from "./validation.js";
import { storeFaultError } from "./store-faults.js";
import type { StoreFault } from "../storage/store-faults.js";

export interface CallContext {
  requestId: string;
  /** Undefined only for public methods. */
  principal: Principal | undefined;
}

export interface AuthedCallContext extends CallContext {
  principal: Principal;
}

export interface CallMeta {
  authorization: string | null | undefined;
  log: CallLog;
}

type UnaryMethods<S extends DescService> = {
  [K in keyof S["method"] as S["method"][K] extends DescMethodUnary ? K : never]: S["method"][K];
};

/** A service's handlers: plain functions of the request and the caller. */
export type Handlers<S extends DescService> = {
  [K in keyof UnaryMethods<S>]: UnaryMethods<S>[K] extends DescMethodUnary<infer I, infer O>
    ? (request: MessageShape<I>, call: AuthedCallContext) => Promise<MessageInitShape<O>>
    : never;
};

/** The access rule of a method; a business method without one is a bug caught at start-up. */
export function methodAccess(method: DescMethodUnary): MethodAccess {
  const access = getOption(method, accessOption);
  if (!access.public && access.permission === "") {
    throw new Error(`${method.parent.typeName}.${method.name} declares no (enterprise_admin.v1.access) option`);
  }
  return access;
}

export class CallPipeline {
  constructor(
    private readonly authenticator: Authenticator,
    /** The busy or full store an error is, if it is one (Database.faultOf): the caller may retry it. */
    private readonly storeFaultOf: (error: unknown) => StoreFault | undefined = () => undefined,
  ) {}

  async run<I extends DescMethodUnary>(
    method: I,
    access: MethodAccess,
    request: MessageShape<I["input"]>,
    meta: CallMeta,
    handler: (request: MessageShape<I["input"]>, call: AuthedCallContext) => Promise<MessageInitShape<I["output"]>>,
  ): Promise<MessageInitShape<I["output"]>> {
    const log = meta.log;
    log.procedure = `/${method.parent.typeName}/${method.name}`;
    try {
      const principal = await this.authenticator.authorize(meta.authorization, access);
      if (principal) log.enterpriseId = principal.enterpriseId;
      validateRequest(method.input, request);
      return await handler(request, { requestId: log.requestId, principal: principal! });
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

/** Builds the Connect implementation of a service from its handlers, through the pipeline. */
export function bindService<S extends DescService>(service: S, handlers: Handlers<S>, pipeline: CallPipeline): Partial<ServiceImpl<S>> {
  const impl: Record<string, unknown> = {};
  for (const candidate of service.methods) {
    if (candidate.methodKind !== "unary") continue;
    const method = candidate as DescMethodUnary;
    const access = methodAccess(method);
    const handler = (handlers as Record<string, Function>)[method.localName] as Parameters<CallPipeline["run"]>[4];
    impl[method.localName] = async (request: never, ctx: { requestHeader: Headers; values: { get: Function } }) => {
      const log: CallLog = ctx.values.get(callLogKey);
      try {
        return await pipeline.run(method, access, request, { authorization: ctx.requestHeader.get("authorization"), log }, handler);
      } catch (error) {
        throw toConnectError(error as AppError, log.requestId);
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

/** One unary method with what every transport needs to run it through the pipeline. */
export interface Endpoint {
  method: DescMethodUnary;
  access: MethodAccess;
  handler: (request: never, call: never) => Promise<unknown>;
}

/** The unary methods of the served services; a method without a handler or an access rule fails the start. */
export function endpointsOf(services: readonly ServedService[]): Endpoint[] {
  const endpoints: Endpoint[] = [];
  for (const { service, handlers } of services) {
    for (const candidate of service.methods) {
      if (candidate.methodKind !== "unary") continue;
      const method = candidate as DescMethodUnary;
      const handler = (handlers as Record<string, Endpoint["handler"]>)[method.localName];
      if (!handler) throw new Error(`no handler for ${service.typeName}.${method.name}`);
      endpoints.push({ method, access: methodAccess(method), handler });
    }
  }
  return endpoints;
}
