import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { renderErrorsDoc } from "../../scripts/render-errors-doc.js";
import { ERROR_TABLE } from "../../src/error-table.js";

describe("the error-code table", () => {
  it("docs/errors.md lists exactly the codes of the proto table (run npm run docs:errors when this fails)", () => {
    expect(readFileSync(new URL("../../docs/errors.md", import.meta.url), "utf8")).toBe(renderErrorsDoc());
  });

  it("keeps the vendor's published numbers with their HTTP statuses", () => {
    const statuses = Object.fromEntries([...ERROR_TABLE].map(([code, entry]) => [code, entry.httpStatus]));
    expect(statuses).toMatchObject({ 0: 200, 1001: 401, 1002: 401, 2001: 500, 4001: 400, 30017: 403, 64290: 429 });
  });
});
