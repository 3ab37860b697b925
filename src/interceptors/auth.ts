// Authentication and permission checks, one implementation for every transport: reads the bearer
// token, finds its hash among the live tokens, and checks the method's declared permission.
import type { MethodAccess } from "../../gen/enterprise_admin/v1/options_pb.js";
import { hashCredential, nowSeconds } from "../domain/credentials.js";
import { invalidToken, permissionDenied } from "../domain/errors.js";
import { splitPermissions } from "../domain/permissions.js";
import type { AuthRepository } from "../storage/auth-repository.js";

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

export class Authenticator {
  constructor(private readonly tokens: AuthRepository) {}

  /** Returns the caller, or undefined for a public method; throws 1002 or 30017. */
  async authorize(authorization: string | null | undefined, access: MethodAccess): Promise<Principal | undefined> {
    if (access.public) return undefined;
    const match = authorization ? BEARER.exec(authorization.trim()) : null;
    if (!match) throw invalidToken("access token missing: send Authorization: Bearer <access_token>");
    const token = await this.tokens.findActiveToken(hashCredential(match[1]!), nowSeconds());
    if (!token) throw invalidToken("access token invalid, expired or revoked");
    const permissions = new Set(splitPermissions(token.permissions));
    if (!access.anyToken && !permissions.has(access.permission)) throw permissionDenied(access.permission);
    return { enterpriseId: token.enterprise_id, appId: token.app_id, permissions, tokenId: token.token_id, expiresAt: Number(token.expires_at) };
  }
}
