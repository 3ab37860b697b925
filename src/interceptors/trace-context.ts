// The caller's W3C Trace Context (https://www.w3.org/TR/trace-context/#traceparent-header), read so that
// the access log ties a request to the caller's trace. An invalid header is ignored, never logged.

export interface TraceParent {
  /** 32 lower-case hex digits, not all zero. */
  traceId: string;
  /** The caller's span: 16 lower-case hex digits, not all zero. */
  parentId: string;
}

/** version-trace_id-parent_id-flags; a version after 00 may append fields after another "-". */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}(-.*)?$/;
const ALL_ZERO = /^0+$/;

/** The trace and parent ids of a valid `traceparent`; undefined when absent, sent twice or invalid. */
export function parseTraceparent(header: string | string[] | undefined): TraceParent | undefined {
  if (typeof header !== "string") return undefined;
  const match = TRACEPARENT.exec(header);
  if (!match) return undefined;
  const [, version, traceId, parentId, extra] = match as unknown as [string, string, string, string, string | undefined];
  // Version ff is forbidden; version 00 has exactly four fields.
  if (version === "ff" || (version === "00" && extra !== undefined)) return undefined;
  if (ALL_ZERO.test(traceId) || ALL_ZERO.test(parentId)) return undefined;
  return { traceId, parentId };
}
