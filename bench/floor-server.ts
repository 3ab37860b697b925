// The floor for bench/department-batch-get.ts: the least a batch-get of departments can cost on this
// machine. A bare node:http handler that reads the JSON body, runs the service's SQL (the text Kysely
// builds in DepartmentRepository.findByIds) through a cached better-sqlite3 prepared statement on the
// same database file, puts the rows in request order, and writes the same envelope. No auth, no
// validation, no logging. Spawned as a child process: floor-server.ts --port N --db FILE --enterprise ID
import { randomUUID } from "node:crypto";
import http from "node:http";
import { parseArgs } from "node:util";
import SqliteDatabase from "better-sqlite3";

interface Row {
  department_id: string;
  parent_department_id: string;
  name: string;
  full_path: string;
  depth: number;
}

const { values } = parseArgs({
  options: { port: { type: "string" }, db: { type: "string" }, enterprise: { type: "string" } },
});
const port = Number(values.port ?? 0);
const enterpriseId = values.enterprise ?? "";
if (!values.db || !enterpriseId) throw new Error("floor-server: --db and --enterprise are required");

const sqlite = new SqliteDatabase(values.db);
sqlite.pragma("journal_mode = WAL");
sqlite.pragma("busy_timeout = 5000");

// One prepared statement per placeholder count, as the service's statement cache keeps one per SQL text.
const statements = new Map<number, SqliteDatabase.Statement>();
function statementFor(count: number): SqliteDatabase.Statement {
  let statement = statements.get(count);
  if (!statement) {
    const placeholders = new Array(count).fill("?").join(", ");
    statement = sqlite.prepare(
      `select "department_id", "parent_department_id", "name", "full_path", "depth" from "department" ` +
      `where "enterprise_id" = ? and "department_id" in (${placeholders})`,
    );
    statements.set(count, statement);
  }
  return statement;
}

function batchGet(requested: string[]): string {
  const ids = [...new Set(requested)];
  const rows = statementFor(ids.length).all(enterpriseId, ...ids) as Row[];
  const byId = new Map<string, Row>();
  for (const row of rows) byId.set(row.department_id, row);
  const items: Row[] = [];
  const notFound: string[] = [];
  for (const id of ids) {
    const row = byId.get(id);
    if (row) items.push(row);
    else notFound.push(id);
  }
  const data = JSON.stringify({ items, not_found_department_ids: notFound });
  return `{"code":0,"message":"success","request_id":${JSON.stringify(randomUUID())},"data":${data}}`;
}

const server = http.createServer({ keepAliveTimeout: 5000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    let status = 200;
    let body: string;
    try {
      const text = chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8");
      const parsed = JSON.parse(text) as { department_ids: string[] };
      body = batchGet(parsed.department_ids);
    } catch (error) {
      status = 500;
      body = JSON.stringify({ code: 1, message: String(error), request_id: "", data: null });
    }
    res.statusCode = status;
    res.setHeader("content-type", "application/json; charset=utf-8");
    res.setHeader("content-length", Buffer.byteLength(body));
    res.end(body);
  });
});

server.listen(port, "127.0.0.1", () => {
  const address = server.address();
  console.log(JSON.stringify({ listening: typeof address === "object" && address ? address.port : port }));
});

const stop = () => {
  server.close();
  server.closeAllConnections();
  sqlite.close();
  process.exit(0);
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
