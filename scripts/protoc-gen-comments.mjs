#!/usr/bin/env node
// A protoc plugin, run by `buf generate` (buf.gen.yaml): writes enterprise_admin/v1/comments.json, the
// leading comment of every service, method, message, field, enum and enum value of our API, by full
// name. The generated descriptors carry no source comments; the OpenAPI document (src/rest/openapi.ts)
// takes its descriptions from this file.
import { readFileSync } from "node:fs";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { CodeGeneratorRequestSchema, CodeGeneratorResponse_Feature, CodeGeneratorResponseSchema } from "@bufbuild/protobuf/wkt";

const OUTPUT = "enterprise_admin/v1/comments.json";

const request = fromBinary(CodeGeneratorRequestSchema, readFileSync(0));
const ours = new Set(request.fileToGenerate.filter((name) => name.startsWith("enterprise_admin/")));
const comments = {};

for (const file of request.protoFile.filter((f) => ours.has(f.name))) {
  const byPath = new Map(file.sourceCodeInfo?.location.map((l) => [l.path.join("."), l.leadingComments]) ?? []);
  const note = (name, path) => {
    const text = prose(byPath.get(path.join(".")) ?? "");
    if (text !== "") comments[name] = text;
  };
  const walkEnum = (en, prefix, path) => {
    const name = `${prefix}.${en.name}`;
    note(name, path);
    en.value.forEach((v, i) => note(`${name}.${v.name}`, [...path, 2, i]));
  };
  const walkMessage = (message, prefix, path) => {
    const name = `${prefix}.${message.name}`;
    note(name, path);
    message.field.forEach((f, i) => note(`${name}.${f.name}`, [...path, 2, i]));
    message.nestedType.forEach((m, i) => walkMessage(m, name, [...path, 3, i]));
    message.enumType.forEach((e, i) => walkEnum(e, name, [...path, 4, i]));
  };
  file.messageType.forEach((m, i) => walkMessage(m, file.package, [4, i]));
  file.enumType.forEach((e, i) => walkEnum(e, file.package, [5, i]));
  file.service.forEach((s, i) => {
    note(`${file.package}.${s.name}`, [6, i]);
    s.method.forEach((m, j) => note(`${file.package}.${s.name}.${m.name}`, [6, i, 2, j]));
  });
}

/** A comment's lines joined into paragraphs (a blank line starts a new one). */
function prose(comment) {
  return comment.split(/\n\s*\n/).map((p) => p.split("\n").map((l) => l.trim()).filter(Boolean).join(" ")).filter(Boolean).join("\n\n");
}

const sorted = Object.fromEntries(Object.entries(comments).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
const response = create(CodeGeneratorResponseSchema, {
  // Reads comments only: proto3 optional fields change nothing here.
  supportedFeatures: BigInt(CodeGeneratorResponse_Feature.PROTO3_OPTIONAL),
  file: ours.size === 0 ? [] : [{ name: OUTPUT, content: `${JSON.stringify(sorted, null, 2)}\n` }],
});
process.stdout.write(toBinary(CodeGeneratorResponseSchema, response));
