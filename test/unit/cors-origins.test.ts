// CORS_ALLOWED_ORIGINS: origins exactly as browsers send them, or the start stops naming the variable.
import { describe, expect, it } from "vitest";
import { loadCorsAllowedOrigins, loadServeConfig } from "../../src/config.js";

describe("CORS_ALLOWED_ORIGINS", () => {
  it("unset or empty turns CORS off", () => {
    expect(loadServeConfig({}, {}).corsAllowedOrigins).toEqual([]);
    expect(loadCorsAllowedOrigins({ CORS_ALLOWED_ORIGINS: " , " })).toEqual([]);
  });

  it("takes comma-separated origins, spaces trimmed, each once", () => {
    expect(loadCorsAllowedOrigins({ CORS_ALLOWED_ORIGINS: "https://admin.example.com, http://localhost:5173,https://admin.example.com" }))
      .toEqual(["https://admin.example.com", "http://localhost:5173"]);
    expect(loadCorsAllowedOrigins({ CORS_ALLOWED_ORIGINS: "http://[::1]:8080" })).toEqual(["http://[::1]:8080"]);
  });

  it("refuses *: each origin is listed", () => {
    expect(() => loadCorsAllowedOrigins({ CORS_ALLOWED_ORIGINS: "*" })).toThrow('CORS_ALLOWED_ORIGINS: "*" is not accepted; list each origin allowed');
  });

  it.each([
    ["https://admin.example.com/", "https://admin.example.com"],
    ["https://admin.example.com/console", "https://admin.example.com"],
    ["HTTPS://Admin.Example.com", "https://admin.example.com"],
    ["https://admin.example.com:443", "https://admin.example.com"],
    ["https://bücher.example", "https://xn--bcher-kva.example"],
  ])("refuses %s, naming the origin a browser would send", (given, sent) => {
    expect(() => loadCorsAllowedOrigins({ CORS_ALLOWED_ORIGINS: given })).toThrow(`CORS_ALLOWED_ORIGINS: "${given}" is not an origin as browsers send it (no path, lower case, no default port): a browser sends "${sent}"`);
  });

  it.each(["admin.example.com", "null", "ftp://files.example.com", "file:///tmp"])("refuses %s, which is no http(s) origin", (given) => {
    expect(() => loadCorsAllowedOrigins({ CORS_ALLOWED_ORIGINS: given })).toThrow("expected http(s)://host[:port]");
  });
});
