// The proto's own comments, for documents built from the descriptors (the generated descriptors carry
// none). docs/proto-comments.json is written by `npm run generate` (scripts/proto-comments.mjs).
import { readFileSync } from "node:fs";
import type { DescEnumValue, DescField, DescMessage, DescMethod, DescService } from "@bufbuild/protobuf";

export type CommentedDesc = DescService | DescMethod | DescMessage | DescField | DescEnumValue;

export class ProtoComments {
  private constructor(private readonly byName: ReadonlyMap<string, string>) {}

  static load(): ProtoComments {
    const text = readFileSync(new URL("../../docs/proto-comments.json", import.meta.url), "utf8");
    return new ProtoComments(new Map(Object.entries(JSON.parse(text) as Record<string, string>)));
  }

  /** The element's leading comment as prose, or "" when it has none. */
  of(desc: CommentedDesc): string {
    return this.byName.get(fullName(desc)) ?? "";
  }
}

function fullName(desc: CommentedDesc): string {
  switch (desc.kind) {
    case "service":
    case "message":
      return desc.typeName;
    case "rpc":
      return `${desc.parent.typeName}.${desc.name}`;
    case "field":
      return `${desc.parent.typeName}.${desc.name}`;
    case "enum_value":
      return `${desc.parent.typeName}.${desc.name}`;
  }
}
