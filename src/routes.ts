// Registers every service once. The Connect router (all RPC transports), the REST facade and the
// reflection service all take their list from here.
import type { ConnectRouter } from "@connectrpc/connect";
import { AuthService, file_enterprise_admin_v1_auth } from "../gen/enterprise_admin/v1/auth_pb.js";
import { DepartmentService, file_enterprise_admin_v1_department } from "../gen/enterprise_admin/v1/department_pb.js";
import { UsageService, file_enterprise_admin_v1_usage } from "../gen/enterprise_admin/v1/usage_pb.js";
import { EnvironmentConfigService, file_enterprise_admin_v1_environment } from "../gen/enterprise_admin/v1/environment_pb.js";
import { bindService, type CallPipeline, type ServedService } from "./interceptors/call-pipeline.js";
import type { RateLimits } from "./domain/rate-limits.js";
import type { AccessAdmin } from "./operations/access-admin.js";
import type { IngestionObserver } from "./operations/record-usage.js";
import { authHandlers } from "./services/auth-service.js";
import { departmentHandlers } from "./services/department-service.js";
import { usageHandlers } from "./services/usage-service.js";
import { environmentHandlers } from "./services/environment-service.js";
import type { EnvironmentConfigs } from "./operations/environment-configs.js";
import { UsageReports } from "./operations/usage-report.js";
import { registerHealth, type HealthState } from "./services/health-service.js";
import { registerReflection } from "./services/reflection-service.js";
import type { DepartmentRepository } from "./storage/department-repository.js";
import type { DirectoryRepository } from "./storage/directory-repository.js";
import type { UsageRepository } from "./storage/usage-repository.js";

export const servedFiles = [
  file_enterprise_admin_v1_auth,
  file_enterprise_admin_v1_department,
  file_enterprise_admin_v1_usage,
  file_enterprise_admin_v1_environment,
];

export interface ServiceDeps {
  access: AccessAdmin;
  departments: DepartmentRepository;
  directory: DirectoryRepository;
  usage: UsageRepository;
  environments: EnvironmentConfigs;
  rateLimits: RateLimits;
  /** Hears of every committed usage batch (the service's metrics). */
  ingested?: IngestionObserver;
}

export function businessServices(deps: ServiceDeps): ServedService[] {
  return [
    { service: AuthService, handlers: authHandlers(deps.access, deps.rateLimits) },
    { service: DepartmentService, handlers: departmentHandlers(deps.departments) },
    { service: UsageService, handlers: usageHandlers(deps.usage, deps.directory, new UsageReports(deps.usage, deps.departments), deps.ingested) },
    { service: EnvironmentConfigService, handlers: environmentHandlers(deps.environments) },
  ];
}

export function routes(services: readonly ServedService[], pipeline: CallPipeline, health: HealthState) {
  return (router: ConnectRouter) => {
    for (const { service, handlers } of services) {
      router.service(service, bindService(service, handlers as never, pipeline));
    }
    registerReflection(router, servedFiles);
    registerHealth(router, health);
  };
}
