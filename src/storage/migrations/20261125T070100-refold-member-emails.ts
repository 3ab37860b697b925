// member.email_folded was email.toLowerCase(), which folds the Kelvin sign to "k" and the like. It
// becomes the fold of domain/email-match.ts, computed here in JavaScript (SQL lower() differs between
// SQLite and PostgreSQL) from a copy of the rule as it stood when this was written: each character
// folds to its lower case only when that is one character whose upper case is the character again.
// Rows are read and updated in batches by member_key. Each row's new value depends on its e-mail only,
// so a run cut short is finished by running it again.
import type { Kysely } from "kysely";

const BATCH_ROWS = 1000;

const foldEmail = (email: string): string => Array.from(email, (character) => {
  const lower = character.toLowerCase();
  return [...lower].length === 1 && lower.toUpperCase() === character ? lower : character;
}).join("");

export async function up(db: Kysely<any>): Promise<void> {
  let after = 0; // member_key counts from 1
  for (;;) {
    const rows = await db.selectFrom("member").select(["member_key", "enterprise_id", "email", "email_folded"])
      .where("member_key", ">", after).orderBy("member_key").limit(BATCH_ROWS).execute();
    if (rows.length === 0) return;
    for (const row of rows) {
      const folded = foldEmail(row.email);
      if (folded === row.email_folded) continue;
      const other = await db.selectFrom("member").select("email").where("enterprise_id", "=", row.enterprise_id)
        .where("email_folded", "=", folded).where("member_key", "<>", row.member_key).executeTakeFirst();
      if (other) {
        throw new Error(`members "${row.email}" and "${other.email}" of enterprise "${row.enterprise_id}" would match alike: change one e-mail in the member table, then migrate again`);
      }
      await db.updateTable("member").set({ email_folded: folded }).where("member_key", "=", row.member_key).execute();
    }
    after = Number(rows[rows.length - 1]!.member_key);
  }
}

export async function down(): Promise<void> {
  throw new Error("20261125T070100-refold-member-emails cannot be undone: restore a backup taken before it");
}
