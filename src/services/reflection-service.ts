// gRPC server reflection (grpc.reflection.v1 and v1alpha) over the generated file descriptors, so grpcurl / buf curl work without a local schema.
import { createFileRegistry, toBinary, type DescFile, type FileRegistry } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import { file_grpc_health_v1_health } from "../../gen/grpc/health/v1/health_pb.js";
import { file_enterprise_admin_v1_errors } from "../../gen/enterprise_admin/v1/errors_pb.js";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { decodableRequests } from "../interceptors/rpc-body-check.js";

// The two protocol versions are wire- and shape-identical; only $typeName differs, so one
// implementation serves both by working on the structural request/response shapes.
type ReflectionRequest = v1.ServerReflectionRequest | v1alpha.ServerReflectionRequest;
type ResponseBody =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: "allExtensionNumbersResponse"; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

// gRPC status codes travel as plain int32 inside ErrorResponse, not as Connect errors.
const NOT_FOUND = 5;
const INVALID_ARGUMENT = 3;

class NotFound extends Error {}

export function registerReflection(router: ConnectRouter, files: readonly DescFile[]): void {
  const reflector = new Reflector([
    ...files,
    // Not a service's file, but every error carries its ErrorDetail: a client decodes it by this schema.
    file_enterprise_admin_v1_errors,
    v1.file_grpc_reflection_v1_reflection,
    v1alpha.file_grpc_reflection_v1alpha_reflection,
    file_grpc_health_v1_health,
  ]);
  router.service(v1.ServerReflection, { serverReflectionInfo: (requests, context) => reflector.serve(decodableRequests(requests, context)) });
  router.service(v1alpha.ServerReflection, { serverReflectionInfo: (requests, context) => reflector.serve(decodableRequests(requests, context)) });
}

class Reflector {
  private readonly registry: FileRegistry;
  // Fields, oneofs, methods and enum values are not registry entries, but clients may ask for them.
  private readonly symbols = new Map<string, DescFile>();
  private readonly services: string[];

  constructor(roots: readonly DescFile[]) {
    const byName = new Map<string, DescFile>();
    const collect = (f: DescFile): void => {
      if (byName.has(f.proto.name)) return;
      byName.set(f.proto.name, f);
      f.dependencies.forEach(collect);
    };
    roots.forEach(collect);
    // createFileRegistry takes protos plus a resolver; one registry per root, merged.
    this.registry = createFileRegistry(
      ...roots.map((f) => createFileRegistry(f.proto, (name) => byName.get(name))),
    );
    const services = new Set<string>();
    for (const t of this.registry) {
      this.symbols.set(t.typeName, t.file);
      switch (t.kind) {
        case "service":
          services.add(t.typeName);
          t.methods.forEach((m) => this.symbols.set(`${t.typeName}.${m.name}`, t.file));
          break;
        case "message":
          t.fields.forEach((f) => this.symbols.set(`${t.typeName}.${f.name}`, t.file));
          t.oneofs.forEach((o) => this.symbols.set(`${t.typeName}.${o.name}`, t.file));
          break;
        case "enum": {
          // Enum values are scoped to the enum's parent (C++ scoping rules), not to the enum.
          const scope = t.parent?.typeName ?? t.file.proto.package;
          t.values.forEach((v) => this.symbols.set(scope ? `${scope}.${v.name}` : v.name, t.file));
          break;
        }
      }
    }
    this.services = [...services].sort();
  }

  async *serve<Q extends ReflectionRequest>(requests: AsyncIterable<Q>) {
    for await (const request of requests) {
      yield { validHost: request.host, originalRequest: request, messageResponse: this.answer(request) };
    }
  }

  private answer(request: ReflectionRequest): ResponseBody {
    const r = request.messageRequest;
    try {
      switch (r.case) {
        case "listServices":
          return { case: "listServicesResponse", value: { service: this.services.map((name) => ({ name })) } };
        case "fileByFilename":
          return this.fileResponse(this.registry.getFile(r.value), `file ${r.value}`);
        case "fileContainingSymbol":
          return this.fileResponse(this.symbols.get(trimDot(r.value)), `symbol ${r.value}`);
        case "fileContainingExtension": {
          const msg = this.registry.getMessage(trimDot(r.value.containingType));
          const ext = msg && this.registry.getExtensionFor(msg, r.value.extensionNumber);
          return this.fileResponse(ext?.file, `extension ${r.value.containingType}:${r.value.extensionNumber}`);
        }
        case "allExtensionNumbersOfType": {
          const typeName = trimDot(r.value);
          if (!this.registry.getMessage(typeName)) throw new NotFound(`type ${r.value} not found`);
          const numbers: number[] = [];
          for (const t of this.registry) {
            if (t.kind === "extension" && t.extendee.typeName === typeName) numbers.push(t.number);
          }
          return { case: "allExtensionNumbersResponse", value: { baseTypeName: typeName, extensionNumber: numbers } };
        }
        default:
          return errorBody(INVALID_ARGUMENT, "no message_request set");
      }
    } catch (e) {
      if (e instanceof NotFound) return errorBody(NOT_FOUND, e.message);
      throw e;
    }
  }

  // Clients can only build descriptors when every import is available, so the whole
  // transitive closure goes out with the requested file first.
  private fileResponse(file: DescFile | undefined, what: string): ResponseBody {
    if (!file) throw new NotFound(`${what} not found`);
    const out: DescFile[] = [];
    const seen = new Set<string>();
    const walk = (f: DescFile): void => {
      if (seen.has(f.name)) return;
      seen.add(f.name);
      out.push(f);
      f.dependencies.forEach(walk);
    };
    walk(file);
    return {
      case: "fileDescriptorResponse",
      value: { fileDescriptorProto: out.map((f) => toBinary(FileDescriptorProtoSchema, f.proto)) },
    };
  }
}

function errorBody(errorCode: number, errorMessage: string): ResponseBody {
  return { case: "errorResponse", value: { errorCode, errorMessage } };
}

// Some clients send fully qualified names with protoc's leading dot.
function trimDot(name: string): string {
  return name.startsWith(".") ? name.slice(1) : name;
}
