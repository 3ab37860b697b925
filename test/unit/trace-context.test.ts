// W3C traceparent parsing: what the access log takes from a caller's header, and what it ignores.
import { describe, expect, it } from "vitest";
import { parseTraceparent } from "../../src/interceptors/trace-context.js";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = "00f067aa0ba902b7";

describe("parseTraceparent", () => {
  it("a version 00 header gives its trace and parent ids, whatever its flags", () => {
    for (const flags of ["00", "01", "ff"]) {
      expect(parseTraceparent(`00-${TRACE}-${PARENT}-${flags}`)).toEqual({ traceId: TRACE, parentId: PARENT });
    }
  });

  it("a later version is read by its first four fields; its further fields are skipped", () => {
    expect(parseTraceparent(`cc-${TRACE}-${PARENT}-01-what-the-future-holds`)).toEqual({ traceId: TRACE, parentId: PARENT });
    expect(parseTraceparent(`01-${TRACE}-${PARENT}-01`)).toEqual({ traceId: TRACE, parentId: PARENT });
  });

  it.each([
    ["absent", undefined],
    ["sent twice", [`00-${TRACE}-${PARENT}-01`, `00-${TRACE}-${PARENT}-01`]],
    ["joined from two headers", `00-${TRACE}-${PARENT}-01, 00-${TRACE}-${PARENT}-01`],
    ["empty", ""],
    ["version ff", `ff-${TRACE}-${PARENT}-01`],
    ["version 00 with a fifth field", `00-${TRACE}-${PARENT}-01-x`],
    ["a later version with a fifth field not after a dash", `01-${TRACE}-${PARENT}-01x`],
    ["upper-case hex", `00-${TRACE.toUpperCase()}-${PARENT}-01`],
    ["an all-zero trace id", `00-${"0".repeat(32)}-${PARENT}-01`],
    ["an all-zero parent id", `00-${TRACE}-${"0".repeat(16)}-01`],
    ["a short trace id", `00-${TRACE.slice(1)}-${PARENT}-01`],
    ["a long parent id", `00-${TRACE}-${PARENT}0-01`],
    ["one-digit flags", `00-${TRACE}-${PARENT}-1`],
    ["surrounding text", ` 00-${TRACE}-${PARENT}-01`],
    ["a line break", `00-${TRACE}-${PARENT}-01\n`],
  ])("%s is ignored", (_case, header) => {
    expect(parseTraceparent(header)).toBeUndefined();
  });
});
