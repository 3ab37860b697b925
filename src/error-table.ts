// The error-code table as the proto defines it: for each ErrorCode, its HTTP status and RPC code,
// read once from the (enterprise_admin.v1.error) enum value options. No other table exists.
import { getOption } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { ErrorCodeSchema, error as errorOption } from "../gen/enterprise_admin/v1/errors_pb.js";
import type { ErrorCode } from "./domain/errors.js";

export interface ErrorCodeEntry {
  code: number;
  name: string;
  httpStatus: number;
  rpcCode: Code;
  summary: string;
}

const rpcCodes = new Map<string, Code>(
  Object.entries(Code).filter(([, v]) => typeof v === "number")
    .map(([name, v]) => [name.replace(/[A-Z]/g, (c, i) => (i ? "_" : "") + c.toLowerCase()), v as Code]),
);
rpcCodes.set("ok", 0 as Code);

export const ERROR_TABLE: ReadonlyMap<number, ErrorCodeEntry> = new Map(
  ErrorCodeSchema.values.map((value) => {
    const info = getOption(value, errorOption);
    const rpcCode = rpcCodes.get(info.grpcCode);
    if (rpcCode === undefined || info.httpStatus === 0) {
      throw new Error(`proto error code ${value.name} lacks a valid (error) option`);
    }
    return [value.number, { code: value.number, name: value.name, httpStatus: info.httpStatus, rpcCode, summary: info.summary }];
  }),
);

export function errorEntry(code: ErrorCode): ErrorCodeEntry {
  return ERROR_TABLE.get(code)!;
}
