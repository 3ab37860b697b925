// UsageService.ExportUsage: the request's window and zone checked, then the export's rows (operations/usage-export.ts) in batches.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import type { ExportUsageRequest, ExportUsageResponseSchema } from "../../gen/enterprise_admin/v1/usage_pb.js";
import { zoneOrDefault } from "../domain/local-time.js";
import { checkReportWindow } from "../domain/report-buckets.js";
import { principalOf } from "../interceptors/auth.js";
import { signalOf } from "../interceptors/call-signal.js";
import { exportFileName, exportUsageRows } from "../operations/usage-export.js";
import type { DirectoryRepository } from "../storage/directory-repository.js";
import type { UsageRepository } from "../storage/usage-repository.js";

export async function* exportUsage(usage: UsageRepository, directory: DirectoryRepository, request: ExportUsageRequest,
  context: HandlerContext): AsyncGenerator<MessageInitShape<typeof ExportUsageResponseSchema>> {
  const principal = principalOf(context);
  // A report's limits: an export is its day buckets' rows.
  const { start, end } = checkReportWindow(request.startTime, request.endTime, "day");
  const settings = await usage.callerEnterpriseSettings(principal.enterpriseId);
  const timeZone = zoneOrDefault(request.timeZone, settings.time_zone, "time_zone");
  // The name a REST download is saved under; the other transports carry it as a header too.
  context.responseHeader.set("content-disposition", `attachment; filename="${exportFileName(start, end, timeZone, request.format || "csv")}"`);
  const rows = exportUsageRows(usage, directory, { enterpriseId: principal.enterpriseId, currency: settings.currency, start, end, timeZone, signal: signalOf(context) });
  for await (const batch of rows) yield { rows: batch };
}
