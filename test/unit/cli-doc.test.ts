import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { renderCliDoc } from "../../scripts/render-cli-doc.js";

describe("the command line reference", () => {
  it("docs/cli.md is what the command definitions render (run npm run docs:cli when this fails)", () => {
    expect(readFileSync(new URL("../../docs/cli.md", import.meta.url), "utf8")).toBe(renderCliDoc());
  });

  it("documents every command with its options and defaults", () => {
    const doc = renderCliDoc();
    for (const heading of ["## `enterprise-admin import usage`", "## `enterprise-admin seed`", "## `enterprise-admin token create`"]) expect(doc).toContain(heading);
    expect(doc).toContain("| `--expires-in <duration>` | lifetime: 90s, 15m, 2h, 7d; at most 90d | default `2h` |");
    expect(doc).toContain("| `--format <format>` | file format: csv or ndjson | default `csv` |");
  });
});
