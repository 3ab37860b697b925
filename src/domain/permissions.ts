// The permissions an enterprise app or token can carry (docs/api-rules.md, Authentication).
import { invalidParameter } from "./errors.js";

export const PERMISSIONS = [
  "statistics:read",
  "departments:read",
  "environments:read",
  "environments:write",
  "usage:write",
] as const;

export type Permission = (typeof PERMISSIONS)[number];

const known = new Set<string>(PERMISSIONS);

/** Parses "a,b" (or a list) into a sorted, de-duplicated permission list; rejects unknown words. */
export function parsePermissions(input: string | readonly string[]): Permission[] {
  const words = (typeof input === "string" ? input.split(",") : input).map((w) => w.trim()).filter(Boolean);
  if (words.length === 0) throw invalidParameter(`--scopes: at least one of ${PERMISSIONS.join(", ")}`);
  for (const word of words) {
    if (!known.has(word)) throw invalidParameter(`--scopes: unknown permission "${word}" (known: ${PERMISSIONS.join(", ")})`);
  }
  return [...new Set(words)].sort() as Permission[];
}

export const formatPermissions = (permissions: readonly string[]) => [...permissions].sort().join(",");
export const splitPermissions = (stored: string): string[] => (stored ? stored.split(",") : []);
