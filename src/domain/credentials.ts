// Random credentials and their stored form. App secrets and access tokens carry 256 random bits, so a
// plain SHA-256 is a safe one-way form for them (no password stretching needed: nothing to guess).
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

export const ACCESS_TOKEN_TTL_SECONDS = 7200;
/** The longest lifetime `token create --expires-in` accepts: 90 days. */
export const MAX_ACCESS_TOKEN_TTL_SECONDS = 90 * 86400;
/** How long an expired or revoked token stays listed before it is purged: one day. */
export const ENDED_TOKEN_RETENTION_SECONDS = 86400;

export const newAppId = () => `app_${randomBytes(9).toString("base64url")}`;
export const newAppSecret = () => `eas_${randomBytes(32).toString("base64url")}`;
export const newAccessToken = () => `eat_${randomBytes(32).toString("base64url")}`;
/** Names a token for operators; random, so it tells nothing about the token. */
export const newTokenId = () => `tok_${randomBytes(16).toString("hex")}`;

export function hashCredential(value: string): string {
  return createHash("sha256").update(value, "utf8").digest("hex");
}

/** Compares a presented secret with a stored hash in constant time. */
export function credentialMatches(presented: string, storedHash: string): boolean {
  const a = Buffer.from(hashCredential(presented), "hex");
  const b = Buffer.from(storedHash, "hex");
  return a.length === b.length && timingSafeEqual(a, b);
}

export const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Parses "90s", "15m", "2h", "7d" or plain seconds into seconds. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d+)([smhd]?)$/.exec(text.trim());
  if (!match) return undefined;
  const unit = { "": 1, s: 1, m: 60, h: 3600, d: 86400 }[match[2] as "" | "s" | "m" | "h" | "d"];
  const seconds = Number(match[1]) * unit;
  return seconds > 0 && Number.isSafeInteger(seconds) ? seconds : undefined;
}
