// Copies the proto files our API imports from npm packages into proto/ (google/, grpc/, buf/), so
// `buf generate` and `buf lint` work offline with no Buf Schema Registry. Run by `npm run generate`.
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";
import { file_buf_validate_validate } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { FieldDescriptorProto_Label, FieldDescriptorProto_Type } from "@bufbuild/protobuf/wkt";

const require = createRequire(import.meta.url);
const root = join(dirname(new URL(import.meta.url).pathname), "..");
const packageDir = (name) => dirname(require.resolve(`${name}/package.json`));

const copies = [
  ["google-proto-files", "google/api/annotations.proto", "google/api/annotations.proto"],
  ["google-proto-files", "google/api/http.proto", "google/api/http.proto"],
  // Not imported by our API: shipped so that a gRPC client can decode grpc-status-details-bin.
  ["google-proto-files", "google/rpc/status.proto", "google/rpc/status.proto"],
  ["@grpc/reflection", "build/proto/grpc/reflection/v1/reflection.proto", "grpc/reflection/v1/reflection.proto"],
  ["@grpc/reflection", "build/proto/grpc/reflection/v1alpha/reflection.proto", "grpc/reflection/v1alpha/reflection.proto"],
  ["grpc-health-check", "proto/health/v1/health.proto", "grpc/health/v1/health.proto"],
];
for (const [pkg, from, to] of copies) {
  const target = join(root, "proto", to);
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(join(packageDir(pkg), from), target);
}

// @bufbuild/protovalidate ships validate.proto only as an embedded descriptor. We print a compile-only
// copy of it (types, fields, oneofs, extensions; no options), enough for protoc to resolve our rules.
const validateTarget = join(root, "proto/buf/validate/validate.proto");
mkdirSync(dirname(validateTarget), { recursive: true });
writeFileSync(validateTarget, printFile(file_buf_validate_validate.proto));

function printFile(file) {
  const out = [
    "// Compile-only copy of buf/validate/validate.proto, printed by scripts/vendor-protos.mjs from the",
    "// descriptor embedded in @bufbuild/protovalidate. Options are omitted. Do not edit.",
    `syntax = "${file.syntax || "proto2"}";`,
    "",
    `package ${file.package};`,
    "",
  ];
  for (const dep of file.dependency) out.push(`import "${dep}";`);
  out.push("");
  for (const e of file.enumType) out.push(...printEnum(e, ""));
  for (const m of file.messageType) out.push(...printMessage(m, ""));
  out.push(...printExtensions(file.extension, "", file.package));
  return out.join("\n") + "\n";
}

function printEnum(e, indent) {
  const lines = [`${indent}enum ${e.name} {`];
  for (const v of e.value) lines.push(`${indent}  ${v.name} = ${v.number};`);
  lines.push(`${indent}}`);
  return lines;
}

function typeName(field) {
  if (field.typeName) return field.typeName;
  const name = FieldDescriptorProto_Type[field.type];
  return name.toLowerCase();
}

function printField(field, indent, inOneof) {
  const label = inOneof ? "" : `${FieldDescriptorProto_Label[field.label].toLowerCase()} `;
  return `${indent}${label}${typeName(field)} ${field.name} = ${field.number};`;
}

function printMessage(m, indent) {
  const lines = [`${indent}message ${m.name} {`];
  const inner = indent + "  ";
  for (const e of m.enumType) lines.push(...printEnum(e, inner));
  for (const n of m.nestedType) lines.push(...printMessage(n, inner));
  // Unset proto2 fields read as their defaults, so "in a oneof" is a presence check.
  const inOneof = (f) => Object.hasOwn(f, "oneofIndex") && !f.proto3Optional;
  const realOneofs = m.oneofDecl.map((o, i) => ({ o, i })).filter(({ i }) =>
    m.field.some((f) => inOneof(f) && f.oneofIndex === i));
  for (const f of m.field) {
    if (!inOneof(f)) lines.push(printField(f, inner, false));
  }
  for (const { o, i } of realOneofs) {
    lines.push(`${inner}oneof ${o.name} {`);
    for (const f of m.field.filter((f) => inOneof(f) && f.oneofIndex === i)) lines.push(printField(f, inner + "  ", true));
    lines.push(`${inner}}`);
  }
  for (const r of m.extensionRange) {
    lines.push(`${inner}extensions ${r.start} to ${r.end >= 536870912 ? "max" : r.end - 1};`);
  }
  for (const r of m.reservedRange) lines.push(`${inner}reserved ${r.start} to ${r.end - 1};`);
  lines.push(...printExtensions(m.extension, inner));
  lines.push(`${indent}}`);
  return lines;
}

function printExtensions(extensions, indent) {
  const byExtendee = new Map();
  for (const x of extensions) {
    const list = byExtendee.get(x.extendee) ?? [];
    list.push(x);
    byExtendee.set(x.extendee, list);
  }
  const lines = [];
  for (const [extendee, list] of byExtendee) {
    lines.push(`${indent}extend ${extendee} {`);
    for (const x of list) lines.push(printField(x, indent + "  ", false));
    lines.push(`${indent}}`);
  }
  return lines;
}
