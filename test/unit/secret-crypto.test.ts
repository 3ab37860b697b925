import { describe, expect, it } from "vitest";
import { associatedData, newDataKey, openSecret, sealSecret, SecretDecryptionError, type SecretContext } from "../../src/domain/secret-crypto.js";

const context: SecretContext = { enterpriseId: "ent-1", environmentId: "env-1", key: "DB_PASSWORD" };
const secret = "hunter2-ünïcødé-✓";

/** Asserts the open fails with SecretDecryptionError and that the message leaks neither value nor key. */
function expectRefused(open: () => unknown, dataKey: Buffer) {
  let caught: unknown;
  try {
    open();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(SecretDecryptionError);
  const message = (caught as Error).message;
  expect(message).not.toContain(secret);
  expect(message).not.toContain(dataKey.toString("base64"));
  expect(message).not.toContain(dataKey.toString("hex"));
}

const flip = (sealed: Buffer, index: number) => {
  const copy = Buffer.from(sealed);
  copy[index]! ^= 0x01;
  return copy;
};

describe("secret crypto", () => {
  it("a data key is 32 random bytes", () => {
    const a = newDataKey();
    expect(a).toHaveLength(32);
    expect(a.equals(newDataKey())).toBe(false);
  });

  it("a sealed value opens to the same text, and two seals of it differ (random nonce)", () => {
    const dataKey = newDataKey();
    const sealed = sealSecret(dataKey, context, secret);
    expect(openSecret(dataKey, context, sealed)).toBe(secret);
    expect(sealSecret(dataKey, context, secret).equals(sealed)).toBe(false);
    expect(openSecret(dataKey, context, sealSecret(dataKey, context, ""))).toBe("");
  });

  it("the format is version 1, a 12-byte nonce, the ciphertext and a 16-byte tag", () => {
    const sealed = sealSecret(newDataKey(), context, secret);
    expect(sealed[0]).toBe(1);
    expect(sealed).toHaveLength(1 + 12 + Buffer.byteLength(secret, "utf8") + 16);
    expect(sealed.includes(Buffer.from(secret, "utf8"))).toBe(false);
  });

  it("flipping one byte of the nonce, the ciphertext or the tag is refused", () => {
    const dataKey = newDataKey();
    const sealed = sealSecret(dataKey, context, secret);
    const nonceByte = 5;
    const ciphertextByte = 13;
    const tagByte = sealed.length - 1;
    for (const index of [nonceByte, ciphertextByte, tagByte]) {
      expectRefused(() => openSecret(dataKey, context, flip(sealed, index)), dataKey);
    }
  });

  it("a truncated value, an empty one and a wrong version byte are refused", () => {
    const dataKey = newDataKey();
    const sealed = sealSecret(dataKey, context, secret);
    expectRefused(() => openSecret(dataKey, context, sealed.subarray(0, sealed.length - 1)), dataKey);
    expectRefused(() => openSecret(dataKey, context, sealed.subarray(0, 20)), dataKey);
    expectRefused(() => openSecret(dataKey, context, Buffer.alloc(0)), dataKey);
    const wrongVersion = Buffer.from(sealed);
    wrongVersion[0] = 2;
    expectRefused(() => openSecret(dataKey, context, wrongVersion), dataKey);
  });

  it("a value opened under another environment, enterprise or key name is refused", () => {
    const dataKey = newDataKey();
    const sealed = sealSecret(dataKey, context, secret);
    expectRefused(() => openSecret(dataKey, { ...context, environmentId: "env-2" }, sealed), dataKey);
    expectRefused(() => openSecret(dataKey, { ...context, enterpriseId: "ent-2" }, sealed), dataKey);
    expectRefused(() => openSecret(dataKey, { ...context, key: "API_TOKEN" }, sealed), dataKey);
  });

  it("a value opened with another data key, or a key of the wrong length, is refused", () => {
    const dataKey = newDataKey();
    const sealed = sealSecret(dataKey, context, secret);
    expectRefused(() => openSecret(newDataKey(), context, sealed), dataKey);
    expectRefused(() => openSecret(dataKey.subarray(0, 16), context, sealed), dataKey);
  });

  it("ciphertexts swapped between two keys of one environment are refused", () => {
    const dataKey = newDataKey();
    const a = { ...context, key: "A" };
    const b = { ...context, key: "B" };
    const sealedA = sealSecret(dataKey, a, "value of a");
    const sealedB = sealSecret(dataKey, b, "value of b");
    expectRefused(() => openSecret(dataKey, a, sealedB), dataKey);
    expectRefused(() => openSecret(dataKey, b, sealedA), dataKey);
  });

  it("field boundaries are part of the binding: (\"a\",\"bc\") does not open as (\"ab\",\"c\")", () => {
    expect(associatedData("p", ["a", "bc"]).equals(associatedData("p", ["ab", "c"]))).toBe(false);
    const dataKey = newDataKey();
    const sealed = sealSecret(dataKey, { enterpriseId: "a", environmentId: "bc", key: "K" }, secret);
    expectRefused(() => openSecret(dataKey, { enterpriseId: "ab", environmentId: "c", key: "K" }, sealed), dataKey);
    const sealed2 = sealSecret(dataKey, { enterpriseId: "e", environmentId: "x", key: "yz" }, secret);
    expectRefused(() => openSecret(dataKey, { enterpriseId: "e", environmentId: "xy", key: "z" }, sealed2), dataKey);
  });

  it("sealing with a key that is not 32 bytes is a programming error", () => {
    expect(() => sealSecret(Buffer.alloc(16), context, secret)).toThrow(RangeError);
  });
});
