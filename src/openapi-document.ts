// The service's OpenAPI document: the REST routes of the served services, with the demo's example
// requests. Served at GET /openapi.json and written to docs/openapi.json (`npm run docs:openapi`).
import type { DescService } from "@bufbuild/protobuf";
import { demoRequests } from "./demo/requests.js";
import { buildOpenApi } from "./rest/openapi.js";
import { ProtoComments } from "./rest/proto-comments.js";
import { servedFiles } from "./routes.js";

const servedServices = (): DescService[] => servedFiles.flatMap((file) => file.services);

export function openApiDocument(services: readonly DescService[] = servedServices()): Record<string, unknown> {
  return buildOpenApi({ services, comments: ProtoComments.load(), examples: demoRequests });
}

/** The document as the file and the route give it: two-space indented, ending in a newline. */
export const openApiJson = (services?: readonly DescService[]): string => `${JSON.stringify(openApiDocument(services), null, 2)}\n`;
