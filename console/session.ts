// The access token, in this tab's sessionStorage only: gone when the tab closes, never in a URL,
// a cookie or localStorage.
const KEY = "enterprise-admin.access-token";

export const session = {
  token(): string | undefined {
    return sessionStorage.getItem(KEY) ?? undefined;
  },
  signIn(token: string): void {
    sessionStorage.setItem(KEY, token);
  },
  signOut(): void {
    sessionStorage.removeItem(KEY);
  },
};
