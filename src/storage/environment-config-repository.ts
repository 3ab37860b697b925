// Environment configurations of one enterprise, their sealed secrets and wrapped data keys, and the
// master key ring's state (which master key wraps new data keys). Rows hold only ciphertexts; sealing
// and opening happen above (operations/environment-configs.ts).
import { sql, type Kysely, type Selectable } from "kysely";
import { isPostgres, lockingRows, type WriteTransaction } from "./database.js";
import type { EnvironmentConfigTable, MasterKeyTable, Schema } from "./schema.js";

export type EnvironmentConfigRow = Selectable<EnvironmentConfigTable>;

export interface SealedSecret {
  key: string;
  sealed_value: Buffer;
}

export interface WrappedKeyRow {
  environment_id: string;
  enterprise_id: string;
  name: string;
  master_key_id: string;
  wrapped_key: Buffer;
}

/** SQLite's `pragma synchronous` values by number, to set one back as it was. */
const SQLITE_SYNCHRONOUS_LEVELS = ["off", "normal", "full", "extra"] as const;

export class EnvironmentConfigRepository {
  readonly db: Kysely<Schema>;
  private readonly writeTransaction?: WriteTransaction;

  /** A repository bound to a transaction (the `tx` that `transaction` hands out) has no writeTransaction. */
  constructor(store: { db: Kysely<Schema>; writeTransaction?: WriteTransaction }) {
    this.db = store.db;
    this.writeTransaction = store.writeTransaction;
  }

  /**
   * Runs `work` in one transaction that holds the store's write lock from its start, with a
   * repository bound to it. (A transaction that read first and then wrote would fail at its first
   * write on SQLite when another writer had committed since its read: a rotation step beside a PATCH.)
   */
  async transaction<T>(work: (tx: EnvironmentConfigRepository) => Promise<T>): Promise<T> {
    if (!this.writeTransaction) throw new Error("a transaction inside a transaction: use the repository it was handed");
    return this.writeTransaction((trx) => work(new EnvironmentConfigRepository({ db: trx })));
  }

  /**
   * A transaction whose commit is on disk, with every commit before it, when this returns, whatever
   * the store's settings: what must hold before a key file loses a key. PostgreSQL: a synchronous
   * commit (the WAL is flushed in order, so earlier commits made with synchronous_commit=off are
   * flushed with it). SQLite (WAL with synchronous=NORMAL does not sync commits one by one): the
   * connection commits with synchronous=FULL, which syncs the log, and with it every earlier commit.
   * Only a transaction that writes syncs anything. (A FULL checkpoint would do it too, but it holds
   * the write lock while it waits for readers, and servers' writes then time out.)
   */
  async durableTransaction<T>(work: (tx: EnvironmentConfigRepository) => Promise<T>): Promise<T> {
    if (isPostgres(this.db)) {
      return this.transaction(async (tx) => {
        await sql`set local synchronous_commit = on`.execute(tx.db);
        return work(tx);
      });
    }
    const { rows } = await sql<{ synchronous: number }>`pragma synchronous`.execute(this.db);
    const previous = SQLITE_SYNCHRONOUS_LEVELS[rows[0]?.synchronous ?? 1] ?? "normal";
    await sql`pragma synchronous = full`.execute(this.db);
    try {
      return await this.transaction(work);
    } finally {
      await sql.raw(`pragma synchronous = ${previous}`).execute(this.db);
    }
  }

  /** `lock`: in a transaction, the row stays as read until it ends (an update's read: another writer waits, and this one reads its commit). */
  async find(enterpriseId: string, id: string, lock?: "update"): Promise<EnvironmentConfigRow | undefined> {
    const query = this.db.selectFrom("environment_config").selectAll().where("enterprise_id", "=", enterpriseId).where("id", "=", id);
    return (lock ? lockingRows(this.db, query, lock) : query).executeTakeFirst();
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
      .select(["environment_data_key.environment_id", "environment_config.enterprise_id", "environment_config.name", "environment_data_key.master_key_id", "environment_data_key.wrapped_key"])
      .orderBy("environment_data_key.environment_id")
      .execute();
  }

  /** Up to `limit` wrapped data keys not wrapped under `masterKeyId`: for re-wrapping them in batches. */
  async dataKeysNotUnder(masterKeyId: string, limit: number): Promise<WrappedKeyRow[]> {
    return this.db.selectFrom("environment_data_key")
      .innerJoin("environment_config", "environment_config.id", "environment_data_key.environment_id")
      .select(["environment_data_key.environment_id", "environment_config.enterprise_id", "environment_config.name", "environment_data_key.master_key_id", "environment_data_key.wrapped_key"])
      .where("environment_data_key.master_key_id", "!=", masterKeyId)
      .orderBy("environment_data_key.environment_id")
      .limit(limit)
      .execute();
  }

  /** How many stored data keys each master key wraps. */
  async dataKeyCounts(): Promise<Map<string, number>> {
    const rows = await this.db.selectFrom("environment_data_key")
      .select((eb) => ["master_key_id", eb.fn.countAll<number | string>().as("data_keys")])
      .groupBy("master_key_id").execute();
    return new Map(rows.map((r) => [r.master_key_id, Number(r.data_keys)]));
  }

  /**
   * In a transaction: the master key that wraps new data keys, locked until the transaction ends, so a
   * rotation cannot make another key current between this read and the commit of a key wrapped under
   * it (`share`: writers side by side; `update`: a rotation step, alone). An empty ring starts with
   * `initialKeyId`. The insert comes first on purpose: on SQLite it takes the database's one write
   * lock at once, so what the transaction reads next stays current until it commits; on PostgreSQL
   * the row lock does that, and `for share` waits for a rotation's update, then reads its new value.
   */
  async lockCurrentMasterKey(initialKeyId: string, mode: "share" | "update"): Promise<string> {
    await this.db.insertInto("master_key_ring").values({ id: 1, current_master_key_id: initialKeyId })
      .onConflict((oc) => oc.column("id").doNothing()).execute();
    const query = this.db.selectFrom("master_key_ring").select("current_master_key_id").where("id", "=", 1);
    return (await lockingRows(this.db, query, mode).executeTakeFirstOrThrow()).current_master_key_id;
  }

  /** The current master key without locking or filling the ring: for reports. */
  async currentMasterKey(): Promise<string | undefined> {
    return (await this.db.selectFrom("master_key_ring").select("current_master_key_id").where("id", "=", 1).executeTakeFirst())?.current_master_key_id;
  }

  /** Only after lockCurrentMasterKey(…, "update") in the same transaction; every other recorded key is retired. */
  async setCurrentMasterKey(masterKeyId: string, nowMs: number): Promise<void> {
    await this.db.updateTable("master_key_ring").set({ current_master_key_id: masterKeyId }).where("id", "=", 1).execute();
    await this.db.updateTable("master_key").set({ retired_at_ms: nowMs })
      .where("id", "!=", masterKeyId).where("retired_at_ms", "is", null).execute();
  }

  /** What this database recorded of a master key its rotation added; undefined when it added none of that id. */
  async addedMasterKey(masterKeyId: string): Promise<Selectable<MasterKeyTable> | undefined> {
    return this.db.selectFrom("master_key").selectAll().where("id", "=", masterKeyId).executeTakeFirst();
  }

  /** Records that a rotation of this database adds this key to the key source (before it does). */
  async recordAddedMasterKey(masterKeyId: string, nowMs: number): Promise<void> {
    await this.db.insertInto("master_key").values({ id: masterKeyId, added_at_ms: nowMs, retired_at_ms: null, removed_at_ms: null })
      .onConflict((oc) => oc.column("id").doNothing()).execute();
  }

  /** The keys this database's rotations added that are not `current`: the only ones a rotation may remove. */
  async addedMasterKeysExcept(current: string): Promise<string[]> {
    const rows = await this.db.selectFrom("master_key").select("id").where("id", "!=", current).orderBy("id").execute();
    return rows.map((r) => r.id);
  }

  /** Marks keys as removed from the key file: none of them is made current again. */
  async markMasterKeysRemoved(masterKeyIds: readonly string[], nowMs: number): Promise<void> {
    if (masterKeyIds.length === 0) return;
    await this.db.updateTable("master_key").set({ removed_at_ms: nowMs }).where("id", "in", masterKeyIds).execute();
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
