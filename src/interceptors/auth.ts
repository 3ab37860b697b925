// Authentication and permission checks, one implementation for every transport: reads the bearer
// token, finds its hash among the live tokens, and checks the method's declared permission; the
// caller then travels with the call as a context value.
import { getOption, type DescMethod, type DescService } from "@bufbuild/protobuf";
import { createContextKey, type ContextValues, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import { access as accessOption, type MethodAccess } from "../../gen/enterprise_admin/v1/options_pb.js";
import { hashCredential, nowSeconds } from "../domain/credentials.js";
import { invalidToken, permissionDenied } from "../domain/errors.js";
import { splitPermissions } from "../domain/permissions.js";
import type { RateLimits } from "../domain/rate-limits.js";
import type { AuthRepository } from "../storage/auth-repository.js";
import { callLogKey } from "./call-log.js";
import { abortError, callSignalKey, untilAborted } from "./call-signal.js";

export interface Principal {
  enterpriseId: string;
  /** The app the token was obtained for; null for a token made by `token create`. */
  appId: string | null;
  permissions: ReadonlySet<string>;
  /** The token's own id (never the token) and its expiry, Unix seconds: what whoami shows. */
  tokenId: string;
  expiresAt: number;
}

const BEARER = /^Bearer ([\x21-\x7e]{1,512})$/i;

/**
 * Every Authorization field line of a request joined with ", " (RFC 9110 section 5.3); undefined without one. Node keeps only the
 * first: with two, a request would act as the first one's caller, whatever a proxy added after it. Joined, no token matches.
 */
export function joinedAuthorization(rawHeaders: readonly string[]): string | undefined {
  const values: string[] = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.toLowerCase() === "authorization") values.push(rawHeaders[i + 1]!);
  }
  return values.length === 0 ? undefined : values.join(", ");
}

export class Authenticator {
  constructor(private readonly tokens: AuthRepository) {}

  /** Returns the caller, or undefined for a public method; throws 1002 or 30017. */
  async authorize(authorization: string | null | undefined, access: MethodAccess): Promise<Principal | undefined> {
    if (access.public) return undefined;
    const sent = authorization?.trim();
    if (!sent) throw invalidToken("access token missing: send Authorization: Bearer <access_token>");
    const match = BEARER.exec(sent);
    if (!match) {
      throw invalidToken("access token malformed: send one Authorization header, \"Bearer \" and the token (1 to 512 printable ASCII characters)");
    }
    const token = await this.tokens.findActiveToken(hashCredential(match[1]!), nowSeconds());
    if (!token) throw invalidToken("access token invalid, expired or revoked");
    const permissions = new Set(splitPermissions(token.permissions));
    if (!access.anyToken && !permissions.has(access.permission)) throw permissionDenied(access.permission);
    return { enterpriseId: token.enterprise_id, appId: token.app_id, permissions, tokenId: token.token_id, expiresAt: Number(token.expires_at) };
  }
}

/** The outcome of authorizing a call: its caller, undefined for a public method. */
export interface Caller {
  principal: Principal | undefined;
}

/** Set once the call is authorized (by the interceptor, or by a transport that authorizes before reading the body). */
export const callerKey = createContextKey<Caller | undefined>(undefined, { description: "caller" });

/** The caller of a method that needs a token; handlers of such methods read it here. */
export function principalOf(context: HandlerContext): Principal {
  const principal = context.values.get(callerKey)?.principal;
  if (!principal) throw new Error(`${context.method.parent.typeName}.${context.method.name}: no authorized caller`);
  return principal;
}

/** The access rule of a method; a business method without one is a bug caught at start-up. */
export function methodAccess(method: DescMethod): MethodAccess {
  const access = getOption(method, accessOption);
  if (!access.public && !access.anyToken && access.permission === "") {
    throw new Error(`${method.parent.typeName}.${method.name} declares no (enterprise_admin.v1.access) option`);
  }
  return access;
}

/**
 * Authorizes calls by their method's declared access and counts them against the caller's rate limit,
 * once per call: as an interceptor, or first of all by a transport that reads the body itself.
 */
export class CallAuthorizer {
  private readonly access = new Map<DescMethod, MethodAccess>();

  /** Reads every method's access rule now: one without fails the start. */
  constructor(services: readonly DescService[], private readonly authenticator: Authenticator, private readonly rateLimits: RateLimits) {
    for (const service of services) for (const method of service.methods) this.access.set(method, methodAccess(method));
  }

  readonly interceptor: Interceptor = (next) => async (req) => {
    await this.authorize(req.method, req.header, req.contextValues);
    return next(req);
  };

  /** Sets the call's caller in `values`, unless it is set already; throws 1002, 30017 or 64290. */
  async authorize(method: DescMethod, header: Headers, values: ContextValues): Promise<void> {
    if (values.get(callerKey)) return;
    // A stream opened and reset at once (a rapid-reset flood) is seen reset only after the I/O
    // that carried both frames: wait that out, and spend no database work on a call already gone.
    await new Promise(setImmediate);
    const signal = values.get(callSignalKey);
    if (signal.aborted) throw abortError(signal.reason);
    // Under the call's deadline: a store that never answers the token's lookup must not hold the call.
    const principal = await untilAborted(this.authenticator.authorize(header.get("authorization"), this.accessOf(method)), signal);
    if (principal) {
      const log = values.get(callLogKey);
      if (log) log.enterpriseId = principal.enterpriseId;
      this.rateLimits.admitCall(principal);
    }
    values.set(callerKey, { principal });
  }

  private accessOf(method: DescMethod): MethodAccess {
    const access = this.access.get(method);
    if (!access) throw new Error(`${method.parent.typeName}.${method.name} is not a served business method`);
    return access;
  }
}
