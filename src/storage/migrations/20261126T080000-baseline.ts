// The schema of the first release, on SQLite and on PostgreSQL: every table, index and seed row. A
// migration is frozen text that imports nothing but Kysely: change the schema by a new migration.
// The layouts differ by dialect where each is read or written best its own way (usage_event and
// usage_running_total; docs/architecture.md, Usage storage).
import { PostgresAdapter, sql, type CreateTableBuilder, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  // All or nothing: Kysely runs a PostgreSQL migration in a transaction, a SQLite one outside any.
  if (db.getExecutor().adapter instanceof PostgresAdapter) await createSchema(db, true);
  else await db.transaction().execute((trx) => createSchema(trx, false));
}

async function createSchema(db: Kysely<any>, postgres: boolean): Promise<void> {
  // IDs and names compare in binary (code point) order on every database: PostgreSQL gets "C" collation.
  const binary = postgres ? sql`collate "C"` : sql``;
  const blob = postgres ? "bytea" : "blob";

  // An enterprise: its name, currency and default time zone (IANA name).
  await db.schema
    .createTable("enterprise")
    .addColumn("enterprise_id", "text", (c) => c.primaryKey().modifyEnd(binary))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("currency", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("time_zone", "text", (c) => c.notNull().defaultTo("UTC"))
    .execute();

  // An enterprise's department tree, each department with its path from the root and its depth.
  await db.schema
    .createTable("department")
    .addColumn("enterprise_id", "text", (c) => c.notNull().modifyEnd(binary)
      .references("enterprise.enterprise_id").onDelete("cascade"))
    .addColumn("department_id", "text", (c) => c.notNull().modifyEnd(binary))
    .addColumn("parent_department_id", "text", (c) => c.notNull().modifyEnd(binary))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("name_folded", "text", (c) => c.notNull())
    .addColumn("full_path", "text", (c) => c.notNull())
    .addColumn("depth", "integer", (c) => c.notNull())
    .addPrimaryKeyConstraint("department_pk", ["enterprise_id", "department_id"])
    .execute();
  await db.schema.createIndex("department_by_parent")
    .on("department").columns(["enterprise_id", "parent_department_id", "department_id"]).execute();

  // An enterprise's members; member_key is the compact integer key the usage tables use instead of
  // (enterprise_id, user_id); email_folded is the e-mail as it matches (domain/email-match.ts).
  await db.schema
    .createTable("member")
    .addColumn("member_key", postgres ? "bigint" : "integer", (c) =>
      postgres ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey().autoIncrement())
    .addColumn("enterprise_id", "text", (c) => c.notNull().modifyEnd(binary)
      .references("enterprise.enterprise_id").onDelete("cascade"))
    .addColumn("user_id", "text", (c) => c.notNull().modifyEnd(binary))
    .addColumn("email", "text", (c) => c.notNull())
    .addColumn("email_folded", "text", (c) => c.notNull())
    .addColumn("account_type", "integer", (c) => c.notNull())
    .addUniqueConstraint("member_identity", ["enterprise_id", "user_id"])
    .execute();
  await db.schema.createIndex("member_by_email")
    .on("member").columns(["enterprise_id", "email_folded"]).unique().execute();

  // Which departments each member is placed in (one or more).
  await db.schema
    .createTable("member_department")
    .addColumn("enterprise_id", "text", (c) => c.notNull().modifyEnd(binary))
    .addColumn("user_id", "text", (c) => c.notNull().modifyEnd(binary))
    .addColumn("department_id", "text", (c) => c.notNull().modifyEnd(binary))
    .addPrimaryKeyConstraint("member_department_pk", ["enterprise_id", "user_id", "department_id"])
    .addForeignKeyConstraint("member_department_member", ["enterprise_id", "user_id"],
      "member", ["enterprise_id", "user_id"], (c) => c.onDelete("cascade"))
    .addForeignKeyConstraint("member_department_department", ["enterprise_id", "department_id"],
      "department", ["enterprise_id", "department_id"], (c) => c.onDelete("cascade"))
    .execute();

  // An enterprise's apps: their permissions and the SHA-256 hash of their secret.
  await db.schema
    .createTable("app")
    .addColumn("app_id", "text", (c) => c.primaryKey())
    .addColumn("enterprise_id", "text", (c) => c.notNull().references("enterprise.enterprise_id").onDelete("cascade"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("secret_hash", "text", (c) => c.notNull())
    .addColumn("permissions", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("revoked_at", "bigint")
    .execute();
  await db.schema.createIndex("app_by_enterprise").on("app").columns(["enterprise_id", "app_id"]).execute();

  // Access tokens: the SHA-256 hash of the token, and token_id, a random id to list and revoke it by.
  // (token_id is the second column on SQLite and the last on PostgreSQL.)
  const tokenId = (t: CreateTableBuilder<"access_token", any>) => t.addColumn("token_id", "text", (c) => c.notNull());
  await db.schema
    .createTable("access_token")
    .addColumn("token_hash", "text", (c) => c.primaryKey())
    .$call((t) => (postgres ? t : tokenId(t)))
    .addColumn("app_id", "text", (c) => c.references("app.app_id").onDelete("cascade"))
    .addColumn("enterprise_id", "text", (c) => c.notNull().references("enterprise.enterprise_id").onDelete("cascade"))
    .addColumn("permissions", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addColumn("revoked_at", "bigint")
    .$call((t) => (postgres ? tokenId(t) : t))
    .execute();
  await db.schema.createIndex("access_token_by_app").on("access_token").column("app_id").execute();
  await db.schema.createIndex("access_token_id").on("access_token").column("token_id").unique().execute();
  await db.schema.createIndex("access_token_by_enterprise").on("access_token").columns(["enterprise_id", "created_at"]).execute();
  await db.schema.createIndex("access_token_by_expiry").on("access_token").column("expires_at").execute();
  await db.schema.createIndex("access_token_by_revocation").on("access_token").column("revoked_at").execute();

  // Environment configurations: the plain parts as JSON text, a revision and its etag.
  await db.schema
    .createTable("environment_config")
    .addColumn("id", "text", (c) => c.primaryKey().modifyEnd(binary))
    .addColumn("enterprise_id", "text", (c) => c.notNull().references("enterprise.enterprise_id").onDelete("cascade"))
    .addColumn("name", "text", (c) => c.notNull().modifyEnd(binary))
    .addColumn("description", "text", (c) => c.notNull())
    .addColumn("preinstalled_packages", "text", (c) => c.notNull())
    .addColumn("runtime_config", "text", (c) => c.notNull())
    .addColumn("environment_variables", "text", (c) => c.notNull())
    .addColumn("created_at_ms", "bigint", (c) => c.notNull())
    .addColumn("updated_at_ms", "bigint", (c) => c.notNull())
    .addColumn("revision", "integer", (c) => c.notNull())
    .addColumn("etag", "text", (c) => c.notNull())
    .addUniqueConstraint("environment_config_name", ["enterprise_id", "name"])
    .execute();

  // Each environment configuration's data key, wrapped (AES-256-GCM) by the master key it names.
  await db.schema
    .createTable("environment_data_key")
    .addColumn("environment_id", "text", (c) => c.primaryKey().references("environment_config.id").onDelete("cascade"))
    .addColumn("master_key_id", "text", (c) => c.notNull())
    .addColumn("wrapped_key", blob, (c) => c.notNull())
    .execute();

  // An environment configuration's secrets, each an AES-256-GCM ciphertext under its data key, never clear text.
  await db.schema
    .createTable("environment_secret")
    .addColumn("environment_id", "text", (c) => c.notNull().references("environment_config.id").onDelete("cascade"))
    .addColumn("key", "text", (c) => c.notNull().modifyEnd(binary))
    .addColumn("sealed_value", blob, (c) => c.notNull())
    .addPrimaryKeyConstraint("environment_secret_pk", ["environment_id", "key"])
    .execute();

  // The master key ring's one row: the master key that wraps new data keys. Left empty: the first
  // write fills it from the key source.
  await db.schema
    .createTable("master_key_ring")
    .addColumn("id", "integer", (c) => c.primaryKey())
    .addColumn("current_master_key_id", "text", (c) => c.notNull())
    .addCheckConstraint("master_key_ring_single_row", sql`id = 1`)
    .execute();

  // The master keys this database's rotations added to the key source (a rotation removes only these).
  await db.schema
    .createTable("master_key")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("added_at_ms", "bigint", (c) => c.notNull())
    .addColumn("retired_at_ms", "bigint")
    .addColumn("removed_at_ms", "bigint")
    .execute();

  // The usage models: (model_name, model_type, model_source) to a small integer.
  await db.schema
    .createTable("usage_model")
    .addColumn("model_id", "integer", (c) => (postgres ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey()))
    .addColumn("model_name", "text", (c) => c.notNull().modifyEnd(binary))
    .addColumn("model_type", "text", (c) => c.notNull().modifyEnd(binary))
    .addColumn("model_source", "text", (c) => c.notNull().modifyEnd(binary))
    .addUniqueConstraint("usage_model_identity", ["model_name", "model_type", "model_source"])
    .execute();

  // The raw usage events (idempotency by (enterprise_id, event_id), audit, a window's partial days),
  // ordered by (UTC day, member_key, ts): a batch for random members writes the current day's pages.
  // Money is integer micro-units.
  if (postgres) {
    // A heap whose primary key is the event's identity, and a covering index in day order.
    await db.schema
      .createTable("usage_event")
      .addColumn("enterprise_id", "text", (c) => c.notNull())
      .addColumn("event_id", "text", (c) => c.notNull())
      .addColumn("member_key", "bigint", (c) => c.notNull())
      .addColumn("model_id", "integer", (c) => c.notNull())
      .addColumn("ts", "bigint", (c) => c.notNull())
      .addColumn("input_tokens", "bigint", (c) => c.notNull())
      .addColumn("output_tokens", "bigint", (c) => c.notNull())
      .addColumn("basic_micros", "bigint", (c) => c.notNull())
      .addColumn("pay_go_micros", "bigint", (c) => c.notNull())
      .addColumn("day", "integer", (c) => c.notNull())
      .addPrimaryKeyConstraint("usage_event_pk", ["enterprise_id", "event_id"])
      .execute();
    await sql`create index usage_event_by_day on usage_event (day, member_key, ts)
      include (model_id, input_tokens, output_tokens, basic_micros, pay_go_micros)`.execute(db);
  } else {
    // The table is its (day, member_key, ts, event_id) B-tree; the event's identity is a unique index.
    await sql`create table usage_event (
      day integer not null, member_key integer not null, ts integer not null, event_id text not null,
      enterprise_id text not null, model_id integer not null,
      input_tokens integer not null, output_tokens integer not null, basic_micros integer not null, pay_go_micros integer not null,
      primary key (day, member_key, ts, event_id)) without rowid`.execute(db);
    await sql`create unique index usage_event_identity on usage_event (enterprise_id, event_id)`.execute(db);
  }

  // Per member and per UTC day with events, the member's running totals per model over every event
  // up to the end of that day, packed (storage/usage-running-totals.ts).
  if (postgres) {
    // A heap: rows stay where they were written, found through the (member_key, day) key.
    await db.schema
      .createTable("usage_running_total")
      .addColumn("member_key", "bigint", (c) => c.notNull())
      .addColumn("day", "integer", (c) => c.notNull())
      .addColumn("totals", "bytea", (c) => c.notNull())
      .addPrimaryKeyConstraint("usage_running_total_pk", ["member_key", "day"])
      .execute();
  } else {
    // Day first, so an ingestion's rows of today share pages; a member's rows are found by the index.
    await sql`create table usage_running_total (member_key bigint not null, day integer not null, totals blob not null,
      primary key (day, member_key)) without rowid`.execute(db);
    await sql`create unique index usage_running_total_by_member on usage_running_total (member_key, day)`.execute(db);
  }

  // One row counting the usage ingestions committed: a chunked import reads it to know whether
  // another ingestion changed the running totals between its chunks.
  await db.schema
    .createTable("usage_ingestion_count")
    .addColumn("id", "integer", (c) => c.primaryKey())
    .addColumn("ingestions", "bigint", (c) => c.notNull())
    .execute();
  await db.insertInto("usage_ingestion_count").values({ id: 1, ingestions: 0 }).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ["usage_ingestion_count", "usage_running_total", "usage_event", "usage_model", "master_key", "master_key_ring",
    "environment_secret", "environment_data_key", "environment_config", "access_token", "app", "member_department", "member",
    "department", "enterprise"]) {
    await db.schema.dropTable(table).execute();
  }
}
