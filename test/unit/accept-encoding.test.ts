// Accept-Encoding: when this server's own bodies may go gzipped.
import { describe, expect, it } from "vitest";
import { acceptsGzip } from "../../src/http/compression.js";

describe("acceptsGzip", () => {
  it.each([
    "gzip", "GZIP", "gzip, deflate, br", "br;q=1.0, gzip;q=0.5", "x-gzip", "*", "br, *;q=0.1", "gzip;q=0, gzip;q=1",
  ])("%j takes gzip", (header) => {
    expect(acceptsGzip(header)).toBe(true);
  });

  it.each([
    undefined, "", "identity", "deflate, br", "gzip;q=0", "gzip;q=0.0, *", "*;q=0", "gzip;q=nonsense",
  ])("%j does not", (header) => {
    expect(acceptsGzip(header)).toBe(false);
  });
});
