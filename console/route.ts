// The console's addresses, #/<view>/<argument>/…: each argument %-encoded on its own, so a value
// holding "/" or "@" stays one argument and says nothing about the others.
export interface Route {
  view: string;
  args: string[];
}

/** The route of a hash; undefined when an argument is not valid %-encoding (a mangled or hand-edited link). */
export function parseRoute(hash: string): Route | undefined {
  const [view = "", ...encoded] = hash.replace(/^#\/?/, "").split("/");
  try {
    return { view, args: encoded.map(decodeURIComponent) };
  } catch {
    return undefined; // URIError: a malformed %-escape
  }
}

/** What a member's address names them by. */
export type MemberKey = "user" | "email";

/** A member's address, by user_id or by e-mail; without `by`, a value the Member view looks up as either. */
export function memberHref(value: string, by?: MemberKey): string {
  return `#/member/${by ? `${by}/` : ""}${encodeURIComponent(value)}`;
}
