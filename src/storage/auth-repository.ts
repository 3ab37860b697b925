// Enterprise apps and access tokens. Only hashes of secrets and tokens are stored or looked up.
import type { Kysely, Selectable } from "kysely";
import { lockingRows, type Database, type WriteTransaction } from "./database.js";
import { reusedQuery } from "./reused-query.js";
import type { AccessTokenTable, AppTable, Schema } from "./schema.js";

export type AppRow = Selectable<AppTable>;
export type AccessTokenRow = Selectable<AccessTokenTable>;

export type TokenListing = Omit<AccessTokenRow, "token_hash" | "enterprise_id">;

export type ActiveToken = Pick<AccessTokenRow, "token_id" | "enterprise_id" | "app_id" | "permissions" | "expires_at">;

export class AuthRepository {
  /** Every authenticated call's lookup: compiled once (reused-query.ts). */
  private readonly activeToken: (tokenHash: string, now: number) => Promise<ActiveToken[]>;

  private readonly db: Kysely<Schema>;
  private readonly writeTransaction: WriteTransaction;

  /** Every write runs in the store's writeTransaction: a token exchange waits for the write lock without blocking the server. */
  constructor(store: Pick<Database, "db" | "writeTransaction">) {
    const { db, writeTransaction } = store;
    this.db = db;
    this.writeTransaction = writeTransaction;
    this.activeToken = reusedQuery(db, (tokenHash: string, now: number) => db.selectFrom("access_token")
      .select(["token_id", "enterprise_id", "app_id", "permissions", "expires_at"])
      .where("token_hash", "=", tokenHash)
      .where("expires_at", ">", now)
      .where("revoked_at", "is", null));
  }

  async insertApp(row: AppRow): Promise<void> {
    await this.writeTransaction((trx) => trx.insertInto("app").values(row).execute());
  }

  async findApp(appId: string): Promise<AppRow | undefined> {
    return this.db.selectFrom("app").selectAll().where("app_id", "=", appId).executeTakeFirst();
  }

  async listApps(enterpriseId: string): Promise<AppRow[]> {
    return this.db.selectFrom("app").selectAll().where("enterprise_id", "=", enterpriseId).orderBy("created_at").orderBy("app_id").execute();
  }

  /** Marks the app and every token it obtained revoked; returns false for an unknown app. */
  async revokeApp(appId: string, now: number): Promise<boolean> {
    return this.writeTransaction(async (trx) => {
      const result = await trx.updateTable("app").set({ revoked_at: now })
        .where("app_id", "=", appId).where("revoked_at", "is", null).executeTakeFirst();
      await trx.updateTable("access_token").set({ revoked_at: now })
        .where("app_id", "=", appId).where("revoked_at", "is", null).execute();
      if (Number(result.numUpdatedRows) > 0) return true;
      return (await trx.selectFrom("app").select("app_id").where("app_id", "=", appId).executeTakeFirst()) !== undefined;
    });
  }

  /**
   * Stores a token; an app's only while the app is live, checked under the write lock that revokeApp takes too, so that no token is
   * stored after its app's revoke. False when the app is revoked (or gone).
   */
  async insertToken(row: AccessTokenRow): Promise<boolean> {
    return this.writeTransaction(async (trx) => {
      if (row.app_id !== null) {
        const app = trx.selectFrom("app").select("app_id").where("app_id", "=", row.app_id).where("revoked_at", "is", null);
        const live = await lockingRows(trx, app, "share").executeTakeFirst();
        if (!live) return false;
      }
      await trx.insertInto("access_token").values(row).execute();
      return true;
    });
  }

  /** Deletes the tokens that ended (expired or revoked) before `before`: a statement of its own. */
  async purgeEndedTokens(before: number): Promise<void> {
    await this.writeTransaction((trx) => trx.deleteFrom("access_token")
      .where((eb) => eb.or([eb("expires_at", "<", before), eb("revoked_at", "<", before)]))
      .execute());
  }

  /** An enterprise's tokens as an operator sees them: never their hashes. */
  async listTokens(enterpriseId: string): Promise<TokenListing[]> {
    return this.db.selectFrom("access_token")
      .select(["token_id", "app_id", "permissions", "created_at", "expires_at", "revoked_at"])
      .where("enterprise_id", "=", enterpriseId)
      .orderBy("created_at").orderBy("token_id").execute();
  }

  /** Marks one token revoked; returns false for an unknown token id. */
  async revokeToken(tokenId: string, now: number): Promise<boolean> {
    return this.writeTransaction(async (trx) => {
      const result = await trx.updateTable("access_token").set({ revoked_at: now })
        .where("token_id", "=", tokenId).where("revoked_at", "is", null).executeTakeFirst();
      if (Number(result.numUpdatedRows) > 0) return true;
      return (await trx.selectFrom("access_token").select("token_id").where("token_id", "=", tokenId).executeTakeFirst()) !== undefined;
    });
  }

  /** The token's id, enterprise, app, permissions and expiry if it exists, has not expired and is not revoked. */
  async findActiveToken(tokenHash: string, now: number): Promise<ActiveToken | undefined> {
    return (await this.activeToken(tokenHash, now))[0];
  }

}
