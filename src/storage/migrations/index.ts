// The static list of migrations, in order. A static index survives bundling; a folder scan does not.
import type { Migration } from "kysely";
import * as createDirectory from "./20261123T070000-create-directory.js";
import * as createAuth from "./20261123T070100-create-auth.js";
import * as createUsage from "./20261123T070200-create-usage.js";
import * as createEnvironmentConfigs from "./20261123T070300-create-environment-configs.js";
import * as usageByDay from "./20261123T070400-usage-by-day.js";
import * as usageCellFrames from "./20261123T070500-usage-cell-frames.js";
import * as usageRunningTotals from "./20261123T070600-usage-running-totals.js";
import * as usageRunningTotalsByDay from "./20261124T070000-usage-running-totals-by-day.js";
import * as addAccessTokenId from "./20261125T070000-add-access-token-id.js";
import * as refoldMemberEmails from "./20261125T070100-refold-member-emails.js";
import * as createMasterKeyRing from "./20261125T070200-create-master-key-ring.js";
import * as createUsageIngestionCount from "./20261125T070300-create-usage-ingestion-count.js";
import * as addEnterpriseTimeZone from "./20261126T070000-add-enterprise-time-zone.js";

export const migrations: Record<string, Migration> = {
  "20261123T070000-create-directory": createDirectory,
  "20261123T070100-create-auth": createAuth,
  "20261123T070200-create-usage": createUsage,
  "20261123T070300-create-environment-configs": createEnvironmentConfigs,
  "20261123T070400-usage-by-day": usageByDay,
  "20261123T070500-usage-cell-frames": usageCellFrames,
  "20261123T070600-usage-running-totals": usageRunningTotals,
  "20261124T070000-usage-running-totals-by-day": usageRunningTotalsByDay,
  "20261125T070000-add-access-token-id": addAccessTokenId,
  "20261125T070100-refold-member-emails": refoldMemberEmails,
  "20261125T070200-create-master-key-ring": createMasterKeyRing,
  "20261125T070300-create-usage-ingestion-count": createUsageIngestionCount,
  "20261126T070000-add-enterprise-time-zone": addEnterpriseTimeZone,
};
