// Renders docs/errors.md from the proto's ErrorCode table (`npm run docs:errors`); a test fails
// when the committed file and the proto disagree.
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { ErrorCodeSchema } from "../gen/enterprise_admin/v1/errors_pb.js";
import { ERROR_TABLE } from "../src/error-table.js";

const rpcName = (code: number) =>
  ["ok", "canceled", "unknown", "invalid_argument", "deadline_exceeded", "not_found", "already_exists",
    "permission_denied", "resource_exhausted", "failed_precondition", "aborted", "out_of_range",
    "unimplemented", "internal", "unavailable", "data_loss", "unauthenticated"][code];

export function renderErrorsDoc(): string {
  const rows = ErrorCodeSchema.values.map((value) => {
    const entry = ERROR_TABLE.get(value.number)!;
    return `| ${value.number} | \`${value.name}\` | ${entry.httpStatus} | \`${rpcName(entry.rpcCode)}\` | ${entry.summary} |`;
  });
  return `# Error codes

Generated from \`proto/enterprise_admin/v1/errors.proto\` by \`npm run docs:errors\`; a test keeps the two
in step. Do not edit by hand.

Every error has one number from this table. REST callers get it as the envelope's \`code\` with the HTTP
status below: \`{"code":4001,"message":"…","request_id":"…","data":null}\`. Connect, gRPC and gRPC-Web
callers get the RPC code below and an \`enterprise_admin.v1.ErrorDetail\` error detail carrying the same
number, the same message and the request id. Messages name the field and the limit; they never carry a
secret or a stack trace. A server fault is always \`2001\`, its cause kept only in the log under the
request id. The standard \`grpc.health.v1.Health\` service refuses a request it cannot read (malformed,
too large, in a compression not taken) the same way, and server reflection a message it cannot decode;
their other errors are connect-es's, without the detail (Health's \`NOT_FOUND\` for a service it does
not know; reflection's limits), and reflection answers a lookup that fails in-band (\`error_response\`).

| code | name | HTTP status | RPC code | meaning |
|---|---|---|---|---|
${rows.join("\n")}
`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(new URL("../docs/errors.md", import.meta.url), renderErrorsDoc());
}
