// The service's OpenAPI document: the REST routes of the served files, with the demo's example
// requests. Served at GET /openapi.json and written to docs/openapi.json (`npm run docs:openapi`).
import { demoRequests } from "./cli/demo-requests.js";
import { buildOpenApi } from "./rest/openapi.js";
import { ProtoComments } from "./rest/proto-comments.js";
import { servedFiles } from "./routes.js";

export function openApiDocument(): Record<string, unknown> {
  return buildOpenApi({ services: servedFiles.flatMap((file) => file.services), comments: ProtoComments.load(), examples: demoRequests });
}

/** The document as the file and the route give it: two-space indented, ending in a newline. */
export const openApiJson = (): string => `${JSON.stringify(openApiDocument(), null, 2)}\n`;
