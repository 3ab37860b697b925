#!/usr/bin/env node
// Writes docs/proto-comments.json (run by `npm run generate`, after buf generate): the leading comment
// of every service, method, message, field, enum and enum value of our API, by full name. The
// generated descriptors carry no source comments; the OpenAPI document (src/rest/openapi.ts) takes its
// descriptions from this file. The comments come from `buf build` (an image keeps the source info),
// so buf generate needs no plugin beyond protoc-gen-es.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";

const OUTPUT = new URL("../docs/proto-comments.json", import.meta.url);

// buf from node_modules/.bin (npm puts it on PATH for the script), in the repository's root.
const image = execFileSync("buf", ["build", "--as-file-descriptor-set", "-o", "-"], { cwd: new URL("..", import.meta.url), maxBuffer: 64 * 2 ** 20 });
const files = fromBinary(FileDescriptorSetSchema, image).file.filter((f) => f.name.startsWith("enterprise_admin/"));
const comments = {};

for (const file of files) {
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
writeFileSync(OUTPUT, `${JSON.stringify(sorted, null, 2)}\n`);
