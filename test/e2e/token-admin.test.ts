// End to end: tokens an operator manages with the CLI (`token create`, `token list`,
// `token revoke`, in this process but one real second process): ids that are not the token, listing that never prints a token, revocation seen at once
// by every running server, the --expires-in cap, rate-limit variables read only by `serve`, and the purge
// of tokens that ended over a day ago.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashCredential, nowSeconds } from "../../src/domain/credentials.js";
import { createLogger } from "../../src/interceptors/logging.js";
import { loadServeConfig } from "../../src/config.js";
import { startService, type RunningService } from "../../src/main.js";
import { cli, cliProcess } from "../helpers/cli.js";
import { dialects } from "../helpers/databases.js";
import { startTestService, type TestService } from "../helpers/service.js";

const TOKEN_ID = /^tok_[0-9a-f]{32}$/;
const DAY = 86_400;

describe.each(dialects)("token administration (%s)", (dialect) => {
  let svc: TestService;
  /** A second server on the same database, as a second instance behind a load balancer. */
  let other: RunningService;

  beforeAll(async () => {
    svc = await startTestService(dialect);
    other = await startService(
      loadServeConfig({ port: "0", host: "127.0.0.1", db: svc.databaseUrl }, { LOG_LEVEL: "silent" }),
      createLogger({ level: "silent" }),
      svc.env,
    );
  });

  afterAll(async () => {
    await other?.close();
    await svc?.close();
  });

  const db = () => ["--db", svc.databaseUrl];

  async function createToken(extra: string[] = []): Promise<{ token: string; tokenId: string }> {
    const made = await cli(["token", "create", "--enterprise", "acme", "--scopes", "departments:read", ...extra, ...db()]);
    expect(made.code, made.stderr).toBe(0);
    const tokenId = /^token_id: (\S+)$/m.exec(made.stderr)?.[1];
    expect(tokenId).toMatch(TOKEN_ID);
    return { token: made.stdout.trim(), tokenId: tokenId! };
  }

  async function statusOn(port: number, token: string): Promise<{ status: number; code: number }> {
    const res = await fetch(`http://127.0.0.1:${port}/openapi/v1/departments/batch-get`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ department_ids: ["110"] }),
    });
    return { status: res.status, code: ((await res.json()) as { code: number }).code };
  }

  it("token create prints the token alone on stdout and its token_id, not derived from it, on stderr", async () => {
    const { token, tokenId } = await createToken();
    expect(token).toMatch(/^eat_[A-Za-z0-9_-]{43}$/);
    const row = await svc.database.db.selectFrom("access_token").select(["token_id", "token_hash"])
      .where("token_hash", "=", hashCredential(token)).executeTakeFirstOrThrow();
    expect(row.token_id).toBe(tokenId);
    expect(hashCredential(token)).not.toContain(tokenId.slice(4));
  });

  it("token revoke: the very next call with the token gets 401 (1002) on both running servers", async () => {
    const { token, tokenId } = await createToken();
    expect(await statusOn(svc.port, token)).toStrictEqual({ status: 200, code: 0 });
    expect(await statusOn(other.port, token)).toStrictEqual({ status: 200, code: 0 });
    const revoked = await cli(["token", "revoke", tokenId, ...db()]);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(JSON.parse(revoked.stdout)).toStrictEqual({ token_id: tokenId, revoked: true });
    expect(await statusOn(svc.port, token)).toStrictEqual({ status: 401, code: 1002 });
    expect(await statusOn(other.port, token)).toStrictEqual({ status: 401, code: 1002 });
  });

  it("token revoke of an unknown id says so and exits non-zero; revoking twice is fine", async () => {
    const unknown = await cli(["token", "revoke", "tok_nope", ...db()]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe('error: token "tok_nope" not found\n');
    expect(unknown.stdout).toBe("");
    const { tokenId } = await createToken();
    // At once from two processes, as two operators would (in-process runs share one thread, and SQLite's busy wait would stall it).
    const twice = await Promise.all([cli(["token", "revoke", tokenId, ...db()]), cliProcess(["token", "revoke", tokenId, ...db()])]);
    expect(twice.map((r) => r.code)).toStrictEqual([0, 0]);
  });

  it("token list prints id, app, permissions, created, expires and revoked; never a token or its hash", async () => {
    const before = nowSeconds();
    const made = await createToken(["--expires-in", "15m"]);
    const app = await svc.access.createApp("acme", ["statistics:read", "departments:read"], "listed");
    const exchanged = await fetch(`${svc.baseUrl}/openapi/v1/auth/token`, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ app_id: app.app_id, app_secret: app.app_secret }),
    }).then((r) => r.json() as Promise<{ data: { access_token: string } }>);
    await svc.access.createToken("globex", ["departments:read"], 60);

    const [listed, listedGlobex] = await Promise.all([
      cli(["token", "list", "--enterprise", "acme", ...db()]),
      cli(["token", "list", "--enterprise", "globex", ...db()]),
    ]);
    expect(listed.code, listed.stderr).toBe(0);
    const tokens = JSON.parse(listed.stdout) as Record<string, unknown>[];
    expect(tokens.every((t) => Object.keys(t).join() === "token_id,app_id,permissions,created_at,expires_at,revoked")).toBe(true);
    expect(tokens.every((t) => TOKEN_ID.test(t.token_id as string))).toBe(true);
    const mine = tokens.find((t) => t.token_id === made.tokenId)!;
    expect(mine).toStrictEqual({ token_id: made.tokenId, app_id: null, permissions: ["departments:read"], created_at: expect.any(Number), expires_at: (mine.created_at as number) + 900, revoked: false });
    expect(mine.created_at).toBeGreaterThanOrEqual(before);
    expect(tokens.filter((t) => t.app_id === app.app_id)).toStrictEqual([
      { token_id: expect.stringMatching(TOKEN_ID), app_id: app.app_id, permissions: ["departments:read", "statistics:read"], created_at: expect.any(Number), expires_at: expect.any(Number), revoked: false },
    ]);
    for (const secret of [made.token, exchanged.data.access_token]) {
      expect(listed.stdout).not.toContain(secret);
      expect(listed.stdout).not.toContain(hashCredential(secret));
    }
    expect(JSON.parse(listedGlobex.stdout)).toHaveLength(1);
  });

  it("--expires-in is capped at 90 days: 90d is accepted, 91d and 400d are refused naming the cap", async () => {
    const tooLong = ["91d", "400d"];
    const [, ...refusals] = await Promise.all([
      createToken(["--expires-in", "90d"]),
      ...tooLong.map((text) => cli(["token", "create", "--enterprise", "acme", "--scopes", "departments:read", "--expires-in", text, ...db()])),
    ]);
    for (const [i, refused] of refusals.entries()) {
      const text = tooLong[i]!;
      expect(refused.code).toBe(2);
      expect(refused.stderr).toBe(`error: --expires-in: "${text}" is longer than the cap of 90 days (90d)\n`);
      expect(refused.stdout).toBe("");
    }
  });

  it("the 90-day cap holds for every caller of AccessAdmin.createToken, not only the CLI", async () => {
    await expect(svc.access.createToken("acme", ["departments:read"], 91 * DAY)).rejects.toMatchObject({
      code: 4001, message: "expires_in: 7862400 s is not a whole number of seconds from 1 to the cap of 7776000 (90 days)",
    });
    await expect(svc.access.createToken("acme", ["departments:read"], 0)).rejects.toMatchObject({ code: 4001 });
    expect((await svc.access.createToken("acme", ["departments:read"], 90 * DAY)).expire).toBe(90 * DAY);
  });

  it("a bad RATE_LIMIT_* value stops only `serve`: token list and revoke still work", async () => {
    const { tokenId } = await createToken();
    const bad = { RATE_LIMIT_RPS: "abc" };
    const listed = await cli(["token", "list", "--enterprise", "acme", ...db()], bad);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout).some((t: { token_id: string }) => t.token_id === tokenId)).toBe(true);
    const revoked = await cli(["token", "revoke", tokenId, ...db()], bad);
    expect(revoked.code, revoked.stderr).toBe(0);
    const served = await cli(["serve", "--port", "0", ...db()], bad);
    expect(served.code).not.toBe(0);
    expect(served.stderr).toContain('RATE_LIMIT_RPS: "abc" is not a number >= 0');
  });

  it("issuing a token purges the tokens that expired or were revoked over a day ago, and keeps the rest", async () => {
    const now = nowSeconds();
    const row = (tokenId: string, expiresAt: number, revokedAt: number | null) => ({
      token_hash: hashCredential(tokenId), token_id: tokenId, app_id: null, enterprise_id: "acme", permissions: "departments:read",
      created_at: now - 10 * DAY, expires_at: expiresAt, revoked_at: revokedAt,
    });
    await svc.database.db.insertInto("access_token").values([
      row("tok_expired_two_days_ago", now - 2 * DAY, null),
      row("tok_revoked_two_days_ago", now + 30 * DAY, now - 2 * DAY),
      row("tok_expired_an_hour_ago", now - 3600, null),
      row("tok_revoked_an_hour_ago", now + 30 * DAY, now - 3600),
      row("tok_live_for_a_month_ago", now + 30 * DAY, null),
    ]).execute();
    const { token } = await createToken();
    const left = await svc.database.db.selectFrom("access_token").select("token_id").where("token_id", "like", "tok_%_ago").orderBy("token_id").execute();
    expect(left.map((r) => r.token_id)).toStrictEqual(["tok_expired_an_hour_ago", "tok_live_for_a_month_ago", "tok_revoked_an_hour_ago"]);
    expect(await statusOn(svc.port, token)).toStrictEqual({ status: 200, code: 0 });
  });
});
