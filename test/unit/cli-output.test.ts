import { describe, expect, it } from "vitest";
import { humanText, isoTime } from "../../src/cli/output.js";

describe("the CLI's tables", () => {
  it("a list of records is a table with a header; Unix-second fields named as times are ISO 8601", () => {
    expect(humanText([{ app_id: "app_1", permissions: ["a:read", "b:write"], created_at: 1795600390, revoked: false }], { times: ["created_at"] })).toBe([
      "┌────────┬─────────────────┬──────────────────────┬─────────┐",
      "│ app_id │ permissions     │ created_at           │ revoked │",
      "├────────┼─────────────────┼──────────────────────┼─────────┤",
      "│ app_1  │ a:read, b:write │ 2026-11-25T09:53:10Z │ false   │",
      "└────────┴─────────────────┴──────────────────────┴─────────┘",
    ].join("\n"));
  });

  it("a record is two columns; an empty list says so; a null is an empty cell", () => {
    expect(humanText({ applied: [], app_id: null })).toBe([
      "┌─────────┬────────┐",
      "│ applied │ (none) │",
      "├─────────┼────────┤",
      "│ app_id  │        │",
      "└─────────┴────────┘",
    ].join("\n"));
    expect(humanText([], { empty: "no apps" })).toBe("no apps");
  });

  it("ISO 8601 to the second, in UTC", () => {
    expect(isoTime(0)).toBe("1970-01-01T00:00:00Z");
    expect(isoTime(1795600390)).toBe("2026-11-25T09:53:10Z");
  });
});
