// The CLI's `import usage` refuses text that no database would store as sent (U+0000, a lone
// surrogate), naming the line and the field, and writes nothing of the file, on SQLite and PostgreSQL.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importDirectory } from "../../src/operations/import-directory.js";
import { migrateToLatest, openDatabase, type Database } from "../../src/storage/database.js";
import { cli } from "../helpers/cli.js";
import { createTestDatabase, dialects, type TestDatabase } from "../helpers/databases.js";
import { acme } from "../helpers/fixtures.js";
import { scratchFolder } from "../helpers/scratch-folder.js";

/** One NDJSON line; `modelName` is JSON text (escapes included) placed inside the quotes. */
const line = (eventId: string, modelNameJson = "gpt-x") =>
  `{"event_id":"${eventId}","user_id":"7001","model_name":"${modelNameJson}","model_type":"Chat","model_source":"Builtin","timestamp":1730077200,"input_tokens":1,"output_tokens":1}`;

describe.each(dialects)("import usage refuses unstorable text (%s)", (dialect) => {
  let testDb: TestDatabase;
  let database: Database;
  const dir = scratchFolder("eadmin-import-text-");

  beforeAll(async () => {
    testDb = await createTestDatabase(dialect);
    database = openDatabase(testDb.url);
    await migrateToLatest(database);
    await importDirectory(database, acme);
  });
  afterAll(async () => {
    await database.close();
    await testDb.drop();
  });

  it.each([
    ["U+0000", "a\\u0000b", 'line 2 (event_id "t-2"): model_name: must not contain the NUL character (U+0000)'],
    ["a lone surrogate", "a\\ud800b", 'line 2 (event_id "t-2"): model_name: not valid Unicode text (a lone surrogate or invalid UTF-8)'],
  ])("%s in model_name: the line and the field are named, nothing is written", async (_name, modelName, message) => {
    const path = join(dir, "events.ndjson");
    writeFileSync(path, [line("t-1"), line("t-2", modelName), line("t-3")].join("\n"));
    const result = await cli(["import", "usage", path, "--enterprise", "acme", "--db", testDb.url]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(message);
    expect(await database.db.selectFrom("usage_event").select("event_id").execute()).toEqual([]);
  });
});
