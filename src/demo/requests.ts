// One example request per REST route, with values from the demo enterprise of `seed --demo`
// (directory.ts, usage.ts, environments.ts): the OpenAPI document's examples, and what
// its test calls. The window is 1 to 7 November 2026 in Asia/Shanghai, inside the demo's usage when
// it is seeded with "today" from 8 November 2026 to 29 January 2027 (demoUsageEvents keeps 90 days).
import type { DescMethod } from "@bufbuild/protobuf";
import { AuthService } from "../../gen/enterprise_admin/v1/auth_pb.js";
import { DepartmentService } from "../../gen/enterprise_admin/v1/department_pb.js";
import { EnvironmentConfigService } from "../../gen/enterprise_admin/v1/environment_pb.js";
import { UsageService } from "../../gen/enterprise_admin/v1/usage_pb.js";
import type { RequestExample } from "../rest/openapi.js";
import { demoDirectory } from "./directory.js";

/** 2026-11-01T00:00:00+08:00 and 2026-11-08T00:00:00+08:00. */
export const EXAMPLE_WINDOW = { start_time: 1_793_462_400, end_time: 1_794_067_200 } as const;
/** A "today" whose demo usage (demoUsageEvents) holds the example window: the one the test seeds with. */
export const EXAMPLE_DEMO_TODAY = "2026-11-25";

const [li, han, wang] = demoDirectory.members;
const zone = demoDirectory.enterprise.time_zone!;

export const demoRequests: ReadonlyMap<DescMethod, RequestExample> = new Map<DescMethod, RequestExample>([
  [AuthService.method.createAccessToken, {
    summary: "Exchange the app_id and app_secret printed by `enterprise-admin app create` for an access token",
    body: { app_id: "app_9f3kQ2xWm7LpT4vZ", app_secret: "printed-once-by-app-create" },
  }],
  [AuthService.method.whoAmI, {
    summary: "What the calling token is: its enterprise, app, permissions and expiry",
  }],
  [DepartmentService.method.batchGetDepartments, {
    summary: "Engineering and Sales East, and an unknown ID",
    body: { department_ids: ["110", "121", "999"] },
  }],
  [DepartmentService.method.listChildDepartments, {
    summary: "The teams of Engineering",
    path: { department_id: "110" },
    query: { page_size: 50 },
  }],
  [DepartmentService.method.searchDepartments, {
    summary: "Departments whose name contains \"sales\"",
    query: { keyword: "sales", page_size: 20 },
  }],
  [UsageService.method.queryUserModelUsage, {
    summary: "Two members by ID (one given as a JSON integer), one by e-mail, and an unknown e-mail, over one week",
    body: { ...EXAMPLE_WINDOW, user_ids: [li!.user_id, Number(han!.user_id)], emails: [wang!.email, "nobody@demo.example"] },
  }],
  [UsageService.method.recordUsageEvents, {
    summary: "Record one event (sending it again records nothing: it counts as a duplicate)",
    body: {
      events: [{
        event_id: "example-event-1", user_id: li!.user_id, model_name: "atlas-4", model_type: "Chat", model_source: "Builtin",
        timestamp: 1_793_673_000, input_tokens: 1200, output_tokens: 300, basic_amount: "0.008100", pay_go_amount: "0.000000",
      }],
    },
  }],
  [UsageService.method.getUsageReport, {
    summary: "Engineering's daily usage per team over one week",
    body: { ...EXAMPLE_WINDOW, time_zone: zone, bucket: "day", group_by: ["department"], department_id: "110" },
  }],
  [UsageService.method.getCoreMetrics, {
    summary: "The enterprise's figures for each day of one week",
    query: { start_date: "2026-11-01", end_date: "2026-11-07", time_zone: zone },
  }],
  [UsageService.method.exportUsage, {
    summary: "One week of rows per (date, member, model) as NDJSON",
    query: { ...EXAMPLE_WINDOW, time_zone: zone, format: "ndjson" },
  }],
  [EnvironmentConfigService.method.createEnvironmentConfig, {
    summary: "A Python data pipeline with one secret",
    body: {
      name: "data-pipeline",
      description: "Nightly ETL jobs in Python with a dbt project",
      preinstalled_packages: { python_version: "3.12" },
      runtime_config: {
        install: "pip install -r requirements.txt",
        start: "python -m pipeline.scheduler",
        terminals: [{ name: "dbt", command: "dbt build --target dev", description: "the dbt models" }],
      },
      environment_variables: { PIPELINE_ENV: "dev", LOG_LEVEL: "info" },
      secrets: { WAREHOUSE_PASSWORD: "demo-not-a-real-password" },
    },
  }],
  [EnvironmentConfigService.method.getEnvironmentConfig, { summary: "One configuration (its id comes from create or list)" }],
  [EnvironmentConfigService.method.listEnvironmentConfigs, { summary: "The first page of configurations", query: { page_size: 10 } }],
  [EnvironmentConfigService.method.updateEnvironmentConfig, {
    summary: "Replace the description and the environment variables, add a secret; other fields are kept",
    body: {
      description: "Nightly and hourly ETL jobs in Python with a dbt project",
      environment_variables: { PIPELINE_ENV: "dev", LOG_LEVEL: "debug" },
      secrets: { DBT_CLOUD_TOKEN: "demo-not-a-real-token" },
    },
  }],
  [EnvironmentConfigService.method.deleteEnvironmentConfig, { summary: "Delete a configuration and its secrets" }],
  [EnvironmentConfigService.method.getSupportedVersions, { summary: "Every supported language version" }],
  [EnvironmentConfigService.method.getStartupPlan, { summary: "The steps a sandbox runs to start a configuration" }],
]);
