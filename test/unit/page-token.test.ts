import { describe, expect, it } from "vitest";
import { decodePageToken, effectivePageSize, encodePageToken } from "../../src/domain/page-token.js";

describe("page tokens and sizes", () => {
  it("round-trips the last key for the same query and refuses it for another", () => {
    const token = encodePageToken("children:110", "112");
    expect(decodePageToken("children:110", token)).toBe("112");
    expect(() => decodePageToken("children:120", token)).toThrow("page_token: not a token returned by this query");
    expect(() => decodePageToken("children:110", "garbage!")).toThrow("page_token");
    expect(decodePageToken("children:110", "")).toBeUndefined();
  });

  it("uses 50 for 0 and lowers sizes over 100", () => {
    expect([effectivePageSize(0), effectivePageSize(7), effectivePageSize(100), effectivePageSize(1000)]).toEqual([50, 7, 100, 100]);
  });
});
