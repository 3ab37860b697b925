// Writes docs/openapi.json, the document GET /openapi.json serves (`npm run docs:openapi`); a test
// fails when the committed file and the generator disagree.
import { writeFileSync } from "node:fs";
import { openApiJson } from "../src/openapi-document.js";

writeFileSync(new URL("../docs/openapi.json", import.meta.url), openApiJson());
