// Usage cells framed by their member's key and length. Nothing is left to do: the cells are empty
// (20261123T070400) and migration 20261123T070600 drops them; the running totals that replaced them
// are made from the raw events after the migrations (storage/database.ts, migrateToLatest).
import type { Kysely } from "kysely";

export async function up(_db: Kysely<any>): Promise<void> {}

export async function down(): Promise<void> {
  throw new Error("20261123T070500-usage-cell-frames cannot be undone: restore a backup taken before it");
}
