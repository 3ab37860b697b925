// Registers every service once. The Connect router (all RPC transports, and the in-memory router
// transport of test/service), the REST facade and the reflection service all take their list from here.
import type { DescService } from "@bufbuild/protobuf";
import { createServiceImplSpec, type ConnectRouter, type Interceptor, type ServiceImpl, type ServiceImplSpec } from "@connectrpc/connect";
import { AuthService, file_enterprise_admin_v1_auth } from "../gen/enterprise_admin/v1/auth_pb.js";
import { DepartmentService, file_enterprise_admin_v1_department } from "../gen/enterprise_admin/v1/department_pb.js";
import { UsageService, file_enterprise_admin_v1_usage } from "../gen/enterprise_admin/v1/usage_pb.js";
import { EnvironmentConfigService, file_enterprise_admin_v1_environment } from "../gen/enterprise_admin/v1/environment_pb.js";
import type { RateLimits } from "./domain/rate-limits.js";
import type { AccessAdmin } from "./operations/access-admin.js";
import type { IngestionObserver } from "./operations/record-usage.js";
import { authService } from "./services/auth-service.js";
import { departmentService } from "./services/department-service.js";
import { usageService } from "./services/usage-service.js";
import { environmentService } from "./services/environment-service.js";
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

/** A business service and its implementation, with connect-es's metadata of each method. */
export interface ServedService {
  service: DescService;
  spec: ServiceImplSpec;
}

const served = <S extends DescService>(service: S, impl: ServiceImpl<S>): ServedService => ({ service, spec: createServiceImplSpec(service, impl) });

export function businessServices(deps: ServiceDeps): ServedService[] {
  return [
    served(AuthService, authService(deps.access, deps.rateLimits)),
    served(DepartmentService, departmentService(deps.departments)),
    served(UsageService, usageService(deps.usage, deps.directory, new UsageReports(deps.usage, deps.departments), deps.ingested)),
    served(EnvironmentConfigService, environmentService(deps.environments)),
  ];
}

/** `interceptors`: the business calls' chain (CallChain); reflection and health run without it. */
export function routes(services: readonly ServedService[], interceptors: Interceptor[], health: HealthState) {
  return (router: ConnectRouter) => {
    for (const { spec } of services) {
      for (const { method, impl } of Object.values(spec.methods)) router.rpc(method, impl, { interceptors });
    }
    registerReflection(router, servedFiles);
    registerHealth(router, health);
  };
}
