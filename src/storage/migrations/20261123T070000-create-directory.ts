// Enterprises, their department tree and their members. Frozen once landed: change by a new migration.
import { PostgresAdapter, sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  // IDs and names compare in binary (code point) order on every database: PostgreSQL gets "C" collation.
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  const binary = postgres ? sql`collate "C"` : sql``;
  await db.schema
    .createTable("enterprise")
    .addColumn("enterprise_id", "text", (c) => c.primaryKey().modifyEnd(binary))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("currency", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();

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

  // member_key: a compact surrogate key for the usage tables (an integer, not a pair of strings).
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
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("member_department").execute();
  await db.schema.dropTable("member").execute();
  await db.schema.dropTable("department").execute();
  await db.schema.dropTable("enterprise").execute();
}
