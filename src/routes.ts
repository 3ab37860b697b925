// Registers every service once. The Connect router (all RPC transports, and the in-memory router
// transport of test/service), the REST facade and the reflection service all take their list from here.
import type { DescService } from "@bufbuild/protobuf";
import { createServiceImplSpec, type ConnectRouter, type Interceptor, type ServiceImpl, type ServiceImplSpec } from "@connectrpc/connect";
import { AuthService, file_enterprise_admin_v1_auth } from "../gen/enterprise_admin/v1/auth_pb.js";
import { DepartmentService, file_enterprise_admin_v1_department } from "../gen/enterprise_admin/v1/department_pb.js";
import { UsageService, file_enterprise_admin_v1_usage } from "../gen/enterprise_admin/v1/usage_pb.js";
import { EnvironmentConfigService, file_enterprise_admin_v1_environment } from "../gen/enterprise_admin/v1/environment_pb.js";
import type { RateLimits } from "./domain/rate-limits.js";
import { Authenticator } from "./interceptors/auth.js";
import { CallChain } from "./interceptors/call-chain.js";
import type { KeyProvider } from "./keys/key-provider.js";
import { AccessAdmin } from "./operations/access-admin.js";
import type { IngestionObserver } from "./operations/record-usage.js";
import { authService } from "./services/auth-service.js";
import { departmentService } from "./services/department-service.js";
import { usageService } from "./services/usage-service.js";
import { environmentService } from "./services/environment-service.js";
import { EnvironmentConfigs } from "./operations/environment-configs.js";
import { UsageReports } from "./operations/usage-report.js";
import type { ReportLimits } from "./domain/report-limits.js";
import { registerHealth, type HealthState } from "./services/health-service.js";
import { registerReflection } from "./services/reflection-service.js";
import { AuthRepository } from "./storage/auth-repository.js";
import type { Database } from "./storage/database.js";
import { DepartmentRepository } from "./storage/department-repository.js";
import { DirectoryRepository } from "./storage/directory-repository.js";
import { EnvironmentConfigRepository } from "./storage/environment-config-repository.js";
import { UsageRepository } from "./storage/usage-repository.js";

export const servedFiles = [
  file_enterprise_admin_v1_auth,
  file_enterprise_admin_v1_department,
  file_enterprise_admin_v1_usage,
  file_enterprise_admin_v1_environment,
];

export interface BusinessDeps {
  database: Database;
  /** Wraps the per-environment data keys that seal secrets. */
  keys: KeyProvider;
  rateLimits: RateLimits;
  /** Hears of every committed usage batch (the service's metrics). */
  ingested?: IngestionObserver;
  /** What the usage reports may hold and how many run at once; DEFAULT_REPORT_LIMITS when not given. */
  reportLimits?: ReportLimits;
}

/** A business service and its implementation, with connect-es's metadata of each method. */
export interface ServedService {
  service: DescService;
  spec: ServiceImplSpec;
}

/** The business services over one database and the call chain they run in. */
export interface Business {
  services: ServedService[];
  chain: CallChain;
  usage: UsageRepository;
  reports: UsageReports;
}

const served = <S extends DescService>(service: S, impl: ServiceImpl<S>): ServedService => ({ service, spec: createServiceImplSpec(service, impl) });

/** What createApp serves on every transport, and what the in-memory tests (test/service) call. */
export function createBusiness({ database, keys, rateLimits, ingested, reportLimits }: BusinessDeps): Business {
  const authRepository = new AuthRepository(database);
  const directory = new DirectoryRepository(database.db);
  const departments = new DepartmentRepository(database.db);
  const usage = new UsageRepository(database);
  const reports = new UsageReports(usage, departments, reportLimits);
  const services = [
    served(AuthService, authService(new AccessAdmin(authRepository, directory), rateLimits)),
    served(DepartmentService, departmentService(departments)),
    served(UsageService, usageService(usage, directory, reports, ingested)),
    served(EnvironmentConfigService, environmentService(new EnvironmentConfigs(new EnvironmentConfigRepository(database), keys))),
  ];
  return { services, chain: new CallChain(services, new Authenticator(authRepository), rateLimits, database.faultOf), usage, reports };
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
