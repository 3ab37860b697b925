import { describe, expect, it } from "vitest";
import { modelKey, modelOfKey } from "../../src/domain/usage-event.js";

describe("model keys", () => {
  it("give back the identity they were made of, a NUL in model_name included", () => {
    for (const name of ["gpt-4o", "", "a\u0000b", "\u0000", "x\u0000Chat\u0000Builtin"]) {
      for (const [type, source] of [["Chat", "Builtin"], ["CUE", "Custom"]] as const) {
        expect(modelOfKey(modelKey(name, type, source))).toStrictEqual({ model_name: name, model_type: type, model_source: source });
      }
    }
  });
});
