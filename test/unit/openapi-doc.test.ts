import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { openApiJson } from "../../src/openapi-document.js";

describe("the OpenAPI document", () => {
  it("docs/openapi.json is what the generator writes from the proto (run npm run docs:openapi when this fails)", () => {
    expect(readFileSync(new URL("../../docs/openapi.json", import.meta.url), "utf8")).toBe(openApiJson());
  });
});
