// Department names as search compares them (name_folded) hold the final sigma ς as σ, so that a search for "Σ" finds "ΟΔΟΣ": the rows
// folded before hold ς where toLowerCase wrote it, at a word's end. Frozen text that imports nothing but Kysely.
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await sql`update department set name_folded = replace(name_folded, ${"ς"}, ${"σ"}) where name_folded like ${"%ς%"}`.execute(db);
}

// Nothing to undo: σ in place of ς changes only what the earlier code finds for a keyword that holds ς.
export async function down(): Promise<void> {}
