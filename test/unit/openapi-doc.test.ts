import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { describe, expect, it } from "vitest";
import { openApiDocument, openApiJson } from "../../src/openapi-document.js";

type Json = Record<string, any>;
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
const doc = openApiDocument() as Json;
const escapePointer = (part: string) => part.replace(/~/g, "~0").replace(/\//g, "~1");

function compiler() {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, "openapi.json", undefined, false);
  return (pointer: string) => ajv.compile({ $ref: `openapi.json#${pointer}` });
}

describe("the OpenAPI document", () => {
  it("docs/openapi.json is what the generator writes from the proto (run npm run docs:openapi when this fails)", () => {
    expect(readFileSync(new URL("../../docs/openapi.json", import.meta.url), "utf8")).toBe(openApiJson());
  });

  it("every example request satisfies the document's own parameter and body schemas", () => {
    const schemaAt = compiler();
    let checked = 0;
    for (const [path, item] of Object.entries(doc.paths as Json)) {
      for (const [method, op] of Object.entries(item as Json)) {
        const at = `/paths/${escapePointer(path)}/${method}`;
        (op.parameters as Json[]).forEach((p, i) => {
          if (p.example === undefined) return;
          const validate = schemaAt(`${at}/parameters/${i}/schema`);
          expect(validate(p.example) ? [] : validate.errors, `${method} ${path} ${p.name}`).toEqual([]);
          checked++;
        });
        if (op.requestBody) {
          const validate = schemaAt(`${at}/requestBody/content/application~1json/schema`);
          const example = op.requestBody.content["application/json"].examples.demo.value;
          expect(validate(example) ? [] : validate.errors, `${method} ${path} body`).toEqual([]);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(15);
  });

  it("types follow the REST JSON: 64-bit integers exact numbers out, numbers or numeric strings in; optional and message fields null when unset", () => {
    const schemas = doc.components.schemas;
    expect(schemas.TokenUsage.properties.input_tokens).toEqual({ type: "integer", format: "int64", minimum: 0 });
    expect(schemas.UsageEventInput.properties.timestamp.anyOf).toEqual([
      { type: "integer", format: "int64", exclusiveMinimum: 0, maximum: 253402300799 },
      { type: "string", pattern: "^-?(0|[1-9][0-9]*)$" },
    ]);
    // user_ids take strings or integers (rest_integer_as_string).
    expect(schemas.QueryUserModelUsageRequest.properties.user_ids.items.anyOf).toEqual([{ type: "string", minLength: 1, maxLength: 128 }, { type: "integer" }]);
    expect(schemas.PreinstalledPackages.properties.python_version.type).toEqual(["string", "null"]);
    expect(schemas.EnvironmentConfig.properties.runtime_config.anyOf).toEqual([{ $ref: "#/components/schemas/RuntimeConfig" }, { type: "null" }]);
    // Every response field is present; a request names its required fields by their rules.
    expect(schemas.Department.required).toEqual(["department_id", "parent_department_id", "name", "full_path", "depth"]);
    expect(schemas.UsageEventInput.required).toEqual(["event_id", "user_id", "model_name", "model_type", "model_source", "timestamp"]);
    expect(schemas.BatchGetDepartmentsRequest).toMatchObject({ required: ["department_ids"], additionalProperties: false });
  });

  it("a path variable is a parameter, not a body field; literal paths and the token exchange stand apart", () => {
    const patch = doc.paths["/api/v1/environment_configs/{id}"].patch;
    expect(patch.parameters[0]).toMatchObject({ name: "id", in: "path", required: true });
    expect(patch.requestBody.content["application/json"].schema.properties).not.toHaveProperty("id");
    expect(doc.paths["/api/v1/environment_configs/supported_versions"].get.operationId).toBe("GetSupportedVersions");
    expect(doc.paths["/openapi/v1/auth/token"].post).toMatchObject({ security: [] });
    expect(doc.paths["/openapi/v1/auth/token"].post).not.toHaveProperty("x-permission");
    expect(doc.security).toEqual([{ bearerAuth: [] }]);
    const ids = Object.values(doc.paths as Json).flatMap((item) => Object.values(item as Json).map((op) => op.operationId));
    expect(new Set(ids).size).toBe(ids.length);
  });
});
