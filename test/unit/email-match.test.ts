import { describe, expect, it } from "vitest";
import { foldEmail } from "../../src/domain/email-match.js";

describe("foldEmail", () => {
  it("folds a character to its lower case when the two are a one-to-one case pair", () => {
    expect(foldEmail("Li.Lei@ACME.example")).toBe("li.lei@acme.example");
    expect(foldEmail("\u00C9LODIE@x")).toBe(foldEmail("\u00E9lodie@x"));
    expect(foldEmail("\u03A3\u03B9\u03C3\u03C5\u03C6\u03BF\u03C2@x")).toBe("\u03C3\u03B9\u03C3\u03C5\u03C6\u03BF\u03C2@x");
    expect(foldEmail("\u{10400}@x")).toBe("\u{10428}@x");
  });

  it("leaves a character whose lower case belongs to another letter or is longer: Kelvin, Angstrom, İ", () => {
    expect(foldEmail("\u212Aate@x")).not.toBe(foldEmail("kate@x"));
    expect(foldEmail("\u212Bngstr\u00F6m@x")).toBe("\u212Bngstr\u00F6m@x");
    expect(foldEmail("\u0130pek@x")).toBe("\u0130pek@x");
  });
});
