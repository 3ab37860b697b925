// A fresh test database, migrated, holding the two fixture enterprises (acme and globex): what the
// end-to-end service and the in-memory service both start from.
import { importDirectory } from "../../src/operations/import-directory.js";
import { migrateToLatest, openDatabase, type Database } from "../../src/storage/database.js";
import { createTestDatabase, type DialectName, type TestDatabase } from "./databases.js";
import { acme, globex } from "./fixtures.js";

export async function createSeededDatabase(dialect: DialectName): Promise<{ testDb: TestDatabase; database: Database }> {
  const testDb = await createTestDatabase(dialect);
  const database = openDatabase(testDb.url);
  await migrateToLatest(database);
  await importDirectory(database, acme);
  await importDirectory(database, globex);
  return { testDb, database };
}
