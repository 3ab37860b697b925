// A query compiled once per shape answers every call with that call's own values, exactly as the
// query built anew would, on each database; a query that puts a value anywhere but in a parameter
// is refused rather than run with the first call's value.
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/storage/database.js";
import { reusedQuery } from "../../src/storage/reused-query.js";
import type { TestDatabase } from "../helpers/databases.js";
import { dialects } from "../helpers/databases.js";
import { createSeededDatabase } from "../helpers/seeded-database.js";

describe.each(dialects)("reused queries on %s", (dialect) => {
  let testDb: TestDatabase;
  let database: Database;

  beforeAll(async () => {
    ({ testDb, database } = await createSeededDatabase(dialect));
  });
  afterAll(async () => {
    await database.close();
    await testDb.drop();
  });

  const built = (enterpriseId: string, ids: readonly string[], withRoot: boolean) => database.db
    .selectFrom("department")
    .select(["department_id", "name"])
    .where("enterprise_id", "=", enterpriseId)
    .where((eb) => eb.or([
      ...(ids.length > 0 ? [eb("department_id", "in", ids)] : []),
      ...(withRoot ? [eb("parent_department_id", "=", "0")] : []),
    ]))
    .orderBy("department_id");

  it("answers each call with its own values, for every shape, as the query built anew does", async () => {
    const reused = reusedQuery(database.db, built);
    const calls: [string, string[], boolean][] = [
      ["acme", ["110", "121"], false],
      ["acme", ["111", "120"], false], // the same shape, other values
      ["globex", ["910", "110"], false], // another enterprise: acme's 110 is not globex's
      ["acme", ["112"], true],
      ["globex", [], true],
      ["acme", ["100", "110", "111", "112", "120", "121"], false],
      ["acme", ["110", "121"], false], // the first shape again
    ];
    for (const call of calls) {
      expect(await reused(...call), JSON.stringify(call)).toEqual(await built(...call).execute());
    }
    expect((await reused("acme", ["111", "120"], false)).map((d) => d.department_id)).toEqual(["111", "120"]);
  });

  it("refuses a query whose value is not one of its parameters", async () => {
    const inRawSql = reusedQuery(database.db, (id: string) => database.db.selectFrom("department").select("name")
      .where(sql<boolean>`department_id = ${sql.raw(`'${id}'`)}`));
    await expect(inRawSql("110")).rejects.toThrow("1 of the query's values are not parameters of its SQL");
  });
});
