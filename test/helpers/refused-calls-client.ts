// A client in a process of its own (its writes race the server's answers, as a real client's do): calls
// BatchGetDepartments over HTTP/1.1 with connect-node's Connect JSON, Connect binary and gRPC-Web
// transports, each transport reused, `count` times with each Authorization header given, and prints one
// JSON object: how many times each outcome was seen, as "<transport> <header index>: <code> <detail>".
//   node --import tsx test/helpers/refused-calls-client.ts BASE_URL COUNT [AUTHORIZATION...]   ("" for none)
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { DepartmentService } from "../../gen/enterprise_admin/v1/department_pb.js";
import { ErrorDetailSchema } from "../../gen/enterprise_admin/v1/errors_pb.js";

const [baseUrl, count, ...authorizations] = process.argv.slice(2);
const transports = {
  "Connect JSON": createConnectTransport({ baseUrl: baseUrl!, httpVersion: "1.1" }),
  "Connect binary": createConnectTransport({ baseUrl: baseUrl!, httpVersion: "1.1", useBinaryFormat: true }),
  "gRPC-Web": createGrpcWebTransport({ baseUrl: baseUrl!, httpVersion: "1.1" }),
};
const seen: Record<string, number> = {};
for (const [name, transport] of Object.entries(transports)) {
  const client = createClient(DepartmentService, transport);
  for (const [index, authorization] of authorizations.entries()) {
    for (let i = 0; i < Number(count); i++) {
      const failure = await client.batchGetDepartments({ departmentIds: ["111"] }, { headers: authorization ? { authorization } : {} })
        .then(() => undefined, (e: unknown) => ConnectError.from(e));
      const outcome = failure === undefined ? "ok" : `${Code[failure.code]} ${failure.findDetails(ErrorDetailSchema)[0]?.code ?? failure.rawMessage}`;
      const key = `${name} ${index}: ${outcome}`;
      seen[key] = (seen[key] ?? 0) + 1;
    }
  }
}
console.log(JSON.stringify(seen));
