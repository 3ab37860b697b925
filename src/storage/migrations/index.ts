// The static list of migrations, in order. A static index survives bundling; a folder scan does not.
import type { Migration } from "kysely";
import * as baseline from "./20261126T080000-baseline.js";
import * as formerMembers from "./20261127T100000-former-members.js";
import * as usageRollups from "./20261128T090000-usage-rollups.js";
import * as directoryVersion from "./20261129T090000-directory-version.js";
import * as rollupMembers from "./20261129T100000-rollup-members.js";
import * as unframeRunningTotals from "./20261130T090000-unframe-running-totals.js";
import * as usageLayout from "./20261201T090000-usage-layout.js";
import * as pendingRollups from "./20261202T090000-pending-rollups.js";
import * as placementsByDepartment from "./20261203T090000-index-placements-by-department.js";
import * as foldFinalSigma from "./20261204T090000-fold-final-sigma.js";

export const migrations: Record<string, Migration> = {
  "20261126T080000-baseline": baseline,
  "20261127T100000-former-members": formerMembers,
  "20261128T090000-usage-rollups": usageRollups,
  "20261129T090000-directory-version": directoryVersion,
  "20261129T100000-rollup-members": rollupMembers,
  "20261130T090000-unframe-running-totals": unframeRunningTotals,
  "20261201T090000-usage-layout": usageLayout,
  "20261202T090000-pending-rollups": pendingRollups,
  "20261203T090000-index-placements-by-department": placementsByDepartment,
  "20261204T090000-fold-final-sigma": foldFinalSigma,
};
