// Enterprise apps and access tokens: create, list, revoke, exchange, and the calling token's own
// description (whoami). Used by the CLI and AuthService.
// Issuing a token also purges the tokens that ended (expired or revoked) more than a day ago.
import {
  ACCESS_TOKEN_TTL_SECONDS, ENDED_TOKEN_RETENTION_SECONDS, MAX_ACCESS_TOKEN_TTL_SECONDS, credentialMatches, hashCredential, newAccessToken,
  newAppId, newAppSecret, newTokenId, nowSeconds,
} from "../domain/credentials.js";
import { AppError, ErrorCode, invalidParameter } from "../domain/errors.js";
import { formatPermissions, splitPermissions, type Permission } from "../domain/permissions.js";
import { characters, nameProblem } from "../domain/text-rules.js";
import type { AuthRepository } from "../storage/auth-repository.js";
import type { DirectoryRepository } from "../storage/directory-repository.js";

/** The longest app name: a label people read in `app list`. */
const MAX_APP_NAME = 128;

/** The calling token as the authenticator found it (the Principal of interceptors/auth.ts). */
export interface CallingToken {
  enterpriseId: string;
  appId: string | null;
  tokenId: string;
  permissions: Iterable<string>;
  /** Unix seconds. */
  expiresAt: number;
}

export class AccessAdmin {
  constructor(private readonly auth: AuthRepository, private readonly directory: DirectoryRepository) {}

  async createApp(enterpriseId: string, permissions: Permission[], name = "app") {
    const problem = name === "" ? "must not be empty" : characters(name) > MAX_APP_NAME ? `longer than ${MAX_APP_NAME} characters` : nameProblem(name);
    if (problem) throw invalidParameter(`name: ${problem}`);
    await this.requireEnterprise(enterpriseId);
    const appId = newAppId();
    const appSecret = newAppSecret();
    await this.auth.insertApp({
      app_id: appId, enterprise_id: enterpriseId, name, secret_hash: hashCredential(appSecret),
      permissions: formatPermissions(permissions), created_at: nowSeconds(), revoked_at: null,
    });
    return { app_id: appId, app_secret: appSecret, enterprise_id: enterpriseId, name, permissions };
  }

  async listApps(enterpriseId: string) {
    await this.requireEnterprise(enterpriseId);
    const rows = await this.auth.listApps(enterpriseId);
    return rows.map((r) => ({
      app_id: r.app_id, name: r.name, permissions: splitPermissions(r.permissions),
      created_at: Number(r.created_at), revoked: r.revoked_at !== null,
    }));
  }

  async revokeApp(appId: string): Promise<boolean> {
    return this.auth.revokeApp(appId, nowSeconds());
  }

  /** A token for scripts, made directly by an operator (no app). */
  async createToken(enterpriseId: string, permissions: Permission[], ttlSeconds = ACCESS_TOKEN_TTL_SECONDS) {
    if (!(Number.isSafeInteger(ttlSeconds) && ttlSeconds > 0 && ttlSeconds <= MAX_ACCESS_TOKEN_TTL_SECONDS)) {
      throw invalidParameter(`expires_in: ${ttlSeconds} s is not a whole number of seconds from 1 to the cap of ${MAX_ACCESS_TOKEN_TTL_SECONDS} (90 days)`);
    }
    await this.requireEnterprise(enterpriseId);
    return (await this.issueToken(enterpriseId, null, formatPermissions(permissions), ttlSeconds))!; // no app: always stored
  }

  /** The token exchange: a live app's id and secret for an access token carrying its permissions. */
  async exchange(appId: string, appSecret: string) {
    const invalid = () => new AppError(ErrorCode.INVALID_APP_CREDENTIALS, "invalid app_id or app_secret");
    const app = await this.auth.findApp(appId);
    if (!app || app.revoked_at !== null || !credentialMatches(appSecret, app.secret_hash)) throw invalid();
    // The app is checked again as the token is stored: a revoke may have come in between.
    const issued = await this.issueToken(app.enterprise_id, app.app_id, app.permissions, ACCESS_TOKEN_TTL_SECONDS);
    if (!issued) throw invalid();
    return { accessToken: issued.accessToken, expire: issued.expire };
  }

  /** What the calling token is (whoami): everything the authenticator found, and the enterprise's name; never the token. */
  async whoami(principal: CallingToken) {
    const enterprise = await this.directory.findEnterprise(principal.enterpriseId);
    return {
      enterpriseId: principal.enterpriseId,
      enterpriseName: enterprise?.name ?? "",
      appId: principal.appId ?? "",
      tokenId: principal.tokenId,
      permissions: [...principal.permissions].sort(),
      expireTime: BigInt(principal.expiresAt),
      expiresIn: BigInt(Math.max(0, principal.expiresAt - nowSeconds())),
    };
  }

  /** An enterprise's tokens, live and recently ended; never the tokens themselves. */
  async listTokens(enterpriseId: string) {
    await this.requireEnterprise(enterpriseId);
    const rows = await this.auth.listTokens(enterpriseId);
    return rows.map((r) => ({
      token_id: r.token_id, app_id: r.app_id, permissions: splitPermissions(r.permissions),
      created_at: Number(r.created_at), expires_at: Number(r.expires_at), revoked: r.revoked_at !== null,
    }));
  }

  /** Revokes one token: the next call with it gets 401 on every server. False for an unknown token id. */
  async revokeToken(tokenId: string): Promise<boolean> {
    return this.auth.revokeToken(tokenId, nowSeconds());
  }

  private async issueToken(enterpriseId: string, appId: string | null, permissions: string, ttlSeconds: number) {
    const token = newAccessToken();
    const tokenId = newTokenId();
    const now = nowSeconds();
    const stored = await this.auth.insertToken({
      token_hash: hashCredential(token), token_id: tokenId, app_id: appId, enterprise_id: enterpriseId, permissions,
      created_at: now, expires_at: now + ttlSeconds, revoked_at: null,
    });
    if (!stored) return undefined;
    // Best effort, after the token is stored: a failed purge (a lock wait, say) must not fail the
    // exchange, and the next token issued tries again.
    await this.auth.purgeEndedTokens(now - ENDED_TOKEN_RETENTION_SECONDS).catch(() => {});
    return { accessToken: token, tokenId, expire: ttlSeconds };
  }

  private async requireEnterprise(enterpriseId: string) {
    if (!(await this.directory.findEnterprise(enterpriseId))) {
      throw invalidParameter(`--enterprise: enterprise "${enterpriseId}" does not exist (import a directory file first)`);
    }
  }
}
