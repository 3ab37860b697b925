// Usage cells framed by their member's key and length (see CELL FRAMES in domain/usage-totals.ts), so
// that the window statement reads every cell into one blob without grouping them per member. The
// cells are rebuilt from the raw events.
import type { Kysely } from "kysely";
import { PostgresAdapter } from "kysely";
import { rebuildCells } from "./legacy-usage-cells.js";
import type { Schema } from "../schema.js";

export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  await rebuildCells({ db: db as Kysely<Schema>, dialect: postgres ? "postgres" : "sqlite" });
}

export async function down(): Promise<void> {
  throw new Error("20261123T070500-usage-cell-frames cannot be undone: restore a backup taken before it");
}
