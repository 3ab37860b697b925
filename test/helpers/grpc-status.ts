// The google.rpc.Status a gRPC client reads from grpc-status-details-bin, with its ErrorDetails unpacked.
import { fromBinary, type DescMessage } from "@bufbuild/protobuf";
import { anyUnpack, AnySchema, type Any } from "@bufbuild/protobuf/wkt";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { ErrorDetailSchema } from "../../gen/enterprise_admin/v1/errors_pb.js";

export interface DecodedStatus {
  code: number;
  message: string;
  /** The enterprise_admin.v1.ErrorDetail entries of `details`; other types are left out. */
  details: { code: number; message: string; requestId: string }[];
}

/** Types to decode with, e.g. compiled from the shipped .proto files; else read by field number. */
export interface StatusTypes {
  status: DescMessage;
  errorDetail: DescMessage;
}

export function decodeGoogleRpcStatus(bytes: Uint8Array, types?: StatusTypes): DecodedStatus {
  const status = types ? fromBinary(types.status, bytes) as unknown as { code: number; message: string; details: Any[] } : readStatus(bytes);
  const errorDetail = types?.errorDetail ?? ErrorDetailSchema;
  const details = status.details
    .filter((any) => any.typeUrl === `type.googleapis.com/${errorDetail.typeName}`)
    .map((any) => anyUnpack(any, errorDetail) as unknown as DecodedStatus["details"][number])
    .map(({ code, message, requestId }) => ({ code, message, requestId }));
  return { code: status.code, message: status.message, details };
}

/** google.rpc.Status {int32 code = 1; string message = 2; repeated google.protobuf.Any details = 3;}. */
function readStatus(bytes: Uint8Array): { code: number; message: string; details: Any[] } {
  const status = { code: 0, message: "", details: [] as Any[] };
  const reader = new BinaryReader(bytes);
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === 1) status.code = reader.int32();
    else if (field === 2) status.message = reader.string();
    else if (field === 3) status.details.push(fromBinary(AnySchema, reader.bytes()));
    else reader.skip(wireType);
  }
  return status;
}
