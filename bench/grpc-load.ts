// The gRPC load generator for bench/department-batch-get.ts (autocannon speaks only HTTP/1.1).
// Run in its own process (forked with an IPC channel) so it never shares the server's event loop:
// `concurrency` workers, each with one call in flight, spread over `connections` HTTP/2 (h2c)
// connections, call BatchGetDepartments back to back for a warm-up, then for the measured duration;
// each call's latency is taken with process.hrtime.bigint().
//
// The parent sends one message: GrpcLoadConfig. Replies: { kind: "verify", items } after one call,
// then { kind: "measuring" } when the warm-up ends and { kind: "result", result: GrpcLoadResult }
// (or { kind: "error", message }).
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { DepartmentService } from "../gen/enterprise_admin/v1/department_pb.js";

export interface GrpcLoadConfig {
  baseUrl: string;
  token: string;
  ids: string[];
  concurrency: number;
  connections: number;
  warmupMs: number;
  durationMs: number;
  /** Advertise no response compression (a stock client advertises gzip, and the service then gzips). */
  identityOnly?: boolean;
  /** Only make one call and report its items (for the pre-measurement check). */
  verifyOnly?: boolean;
}

export interface GrpcLoadResult {
  requests: number;
  errors: number;
  firstError?: string;
  elapsedMs: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  /** CPU the load generator used, as a share of one core; near 1 means the client was the limit. */
  clientCpuShare: number;
}

type DepartmentClient = Client<typeof DepartmentService>;

async function main(config: GrpcLoadConfig): Promise<void> {
  const managers: Http2SessionManager[] = [];
  const clients: DepartmentClient[] = [];
  for (let i = 0; i < config.connections; i++) {
    const sessionManager = new Http2SessionManager(config.baseUrl);
    managers.push(sessionManager);
    clients.push(createClient(DepartmentService, createGrpcTransport({ baseUrl: config.baseUrl, sessionManager, ...(config.identityOnly ? { acceptCompression: [] } : {}) })));
  }
  const headers = { authorization: `Bearer ${config.token}` };
  const request = { departmentIds: config.ids };

  try {
    const first = await clients[0]!.batchGetDepartments(request, { headers });
    send({ kind: "verify", ids: first.items.map((d) => d.departmentId), items: first.items.map((d) => ({ department_id: d.departmentId, parent_department_id: d.parentDepartmentId, name: d.name, full_path: d.fullPath, depth: d.depth })) });
    if (config.verifyOnly) return;

    const run = async (ms: number, latencies: number[] | undefined) => {
      let errors = 0;
      let firstError: string | undefined;
      const started = process.hrtime.bigint();
      const deadline = started + BigInt(Math.round(ms * 1e6));
      const worker = async (client: DepartmentClient) => {
        for (;;) {
          const t0 = process.hrtime.bigint();
          if (t0 >= deadline) return;
          try {
            await client.batchGetDepartments(request, { headers });
            latencies?.push(Number(process.hrtime.bigint() - t0) / 1e6);
          } catch (error) {
            errors++;
            firstError ??= error instanceof Error ? error.message : String(error);
          }
        }
      };
      await Promise.all(Array.from({ length: config.concurrency }, (_, i) => worker(clients[i % clients.length]!)));
      return { errors, firstError, elapsedMs: Number(process.hrtime.bigint() - started) / 1e6 };
    };

    await run(config.warmupMs, undefined);
    const latencies: number[] = [];
    send({ kind: "measuring" });
    const cpuBefore = process.cpuUsage();
    const { errors, firstError, elapsedMs } = await run(config.durationMs, latencies);
    const cpu = process.cpuUsage(cpuBefore);
    const sorted = Float64Array.from(latencies).sort();
    const pct = (p: number) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!);
    const result: GrpcLoadResult = {
      requests: sorted.length,
      errors,
      firstError,
      elapsedMs,
      rps: (sorted.length / elapsedMs) * 1000,
      p50Ms: pct(50),
      p99Ms: pct(99),
      meanMs: sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length),
      clientCpuShare: (cpu.user + cpu.system) / 1000 / elapsedMs,
    };
    send({ kind: "result", result });
  } finally {
    for (const manager of managers) manager.abort();
  }
}

function send(message: unknown): void {
  process.send?.(message);
}

process.once("message", (config: GrpcLoadConfig) => {
  main(config)
    .catch((error: unknown) => send({ kind: "error", message: error instanceof Error ? error.stack ?? error.message : String(error) }))
    .finally(() => process.disconnect?.());
});
