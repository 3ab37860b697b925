// Environment configurations of one enterprise, their sealed secrets and wrapped data keys. Rows
// hold only ciphertexts; sealing and opening happen above (operations/environment-configs.ts).
import type { Kysely, Selectable } from "kysely";
import type { EnvironmentConfigTable, Schema } from "./schema.js";

export type EnvironmentConfigRow = Selectable<EnvironmentConfigTable>;

export interface SealedSecret {
  key: string;
  sealed_value: Buffer;
}

export interface WrappedKeyRow {
  environment_id: string;
  enterprise_id: string;
  master_key_id: string;
  wrapped_key: Buffer;
}

export class EnvironmentConfigRepository {
  constructor(readonly db: Kysely<Schema>) {}

  /** Runs `work` in one transaction with a repository bound to it. */
  async transaction<T>(work: (tx: EnvironmentConfigRepository) => Promise<T>): Promise<T> {
    return this.db.transaction().execute((trx) => work(new EnvironmentConfigRepository(trx)));
  }

  async find(enterpriseId: string, id: string): Promise<EnvironmentConfigRow | undefined> {
    return this.db.selectFrom("environment_config").selectAll()
      .where("enterprise_id", "=", enterpriseId).where("id", "=", id).executeTakeFirst();
  }

  async nameTaken(enterpriseId: string, name: string, exceptId?: string): Promise<boolean> {
    let query = this.db.selectFrom("environment_config").select("id")
      .where("enterprise_id", "=", enterpriseId).where("name", "=", name);
    if (exceptId !== undefined) query = query.where("id", "!=", exceptId);
    return (await query.executeTakeFirst()) !== undefined;
  }

  /** Ordered by name then id, starting after (name, id); reads `limit` rows. */
  async list(enterpriseId: string, after: { name: string; id: string } | undefined, limit: number): Promise<EnvironmentConfigRow[]> {
    let query = this.db.selectFrom("environment_config").selectAll().where("enterprise_id", "=", enterpriseId);
    if (after) {
      query = query.where((eb) => eb.or([
        eb("name", ">", after.name),
        eb.and([eb("name", "=", after.name), eb("id", ">", after.id)]),
      ]));
    }
    return query.orderBy("name").orderBy("id").limit(limit).execute();
  }

  async secretKeys(environmentIds: readonly string[]): Promise<Map<string, string[]>> {
    const keys = new Map<string, string[]>(environmentIds.map((id) => [id, []]));
    if (environmentIds.length === 0) return keys;
    const rows = await this.db.selectFrom("environment_secret").select(["environment_id", "key"])
      .where("environment_id", "in", environmentIds).orderBy("environment_id").orderBy("key").execute();
    for (const row of rows) keys.get(row.environment_id)!.push(row.key);
    return keys;
  }

  async sealedSecrets(environmentId: string): Promise<SealedSecret[]> {
    return this.db.selectFrom("environment_secret").select(["key", "sealed_value"])
      .where("environment_id", "=", environmentId).orderBy("key").execute();
  }

  async insert(row: EnvironmentConfigRow, dataKey: { master_key_id: string; wrapped_key: Buffer }): Promise<void> {
    await this.db.insertInto("environment_config").values(row).execute();
    await this.db.insertInto("environment_data_key").values({ environment_id: row.id, ...dataKey }).execute();
  }

  /** Writes the new state if the stored revision is still `expectedRevision`; false when it moved on. */
  async update(row: EnvironmentConfigRow, expectedRevision: number): Promise<boolean> {
    const { id, enterprise_id, created_at_ms: _created, ...changes } = row;
    const result = await this.db.updateTable("environment_config").set(changes)
      .where("id", "=", id).where("enterprise_id", "=", enterprise_id).where("revision", "=", expectedRevision)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async putSecrets(environmentId: string, secrets: readonly SealedSecret[]): Promise<void> {
    if (secrets.length === 0) return;
    await this.db.insertInto("environment_secret")
      .values(secrets.map((s) => ({ environment_id: environmentId, key: s.key, sealed_value: s.sealed_value })))
      .onConflict((oc) => oc.columns(["environment_id", "key"]).doUpdateSet((eb) => ({ sealed_value: eb.ref("excluded.sealed_value") })))
      .execute();
  }

  async deleteSecrets(environmentId: string, keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    await this.db.deleteFrom("environment_secret").where("environment_id", "=", environmentId).where("key", "in", keys).execute();
  }

  async delete(enterpriseId: string, id: string): Promise<boolean> {
    // Secrets and the data key go with it (foreign keys cascade); delete them first anyway so the
    // ciphertexts are gone even where cascades are off.
    await this.db.deleteFrom("environment_secret").where("environment_id", "=", id)
      .where((eb) => eb.exists(eb.selectFrom("environment_config").select("id").where("id", "=", id).where("enterprise_id", "=", enterpriseId)))
      .execute();
    const result = await this.db.deleteFrom("environment_config").where("enterprise_id", "=", enterpriseId).where("id", "=", id).executeTakeFirst();
    return Number(result.numDeletedRows) === 1;
  }

  async dataKey(environmentId: string): Promise<{ master_key_id: string; wrapped_key: Buffer } | undefined> {
    return this.db.selectFrom("environment_data_key").select(["master_key_id", "wrapped_key"])
      .where("environment_id", "=", environmentId).executeTakeFirst();
  }

  /** Every wrapped data key, with its environment's enterprise: for key rotation. */
  async allDataKeys(): Promise<WrappedKeyRow[]> {
    return this.db.selectFrom("environment_data_key")
      .innerJoin("environment_config", "environment_config.id", "environment_data_key.environment_id")
      .select(["environment_data_key.environment_id", "environment_config.enterprise_id", "environment_data_key.master_key_id", "environment_data_key.wrapped_key"])
      .orderBy("environment_data_key.environment_id")
      .execute();
  }

  async replaceDataKey(environmentId: string, masterKeyId: string, wrapped: Buffer): Promise<void> {
    await this.db.updateTable("environment_data_key").set({ master_key_id: masterKeyId, wrapped_key: wrapped })
      .where("environment_id", "=", environmentId).execute();
  }
}

/** A write that lost a race for a name: the unique (enterprise_id, name) constraint refused it. */
export function isNameConflict(error: unknown): boolean {
  const e = error as { code?: string; constraint?: string; message?: string };
  if (e?.code === "23505") return e.constraint === "environment_config_name";
  return e?.code === "SQLITE_CONSTRAINT_UNIQUE" && /environment_config\.enterprise_id, environment_config\.name/.test(e.message ?? "");
}
