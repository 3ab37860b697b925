// gRPC health checking (grpc.health.v1.Health) so load balancers and k8s probes can see whether we serve.
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";

export { ServingStatus };

export class HealthState {
  private readonly statuses = new Map<string, ServingStatus>();
  private readonly waiters = new Set<() => void>();
  private shuttingDown = false;

  /** "" (the whole server) and every given fully qualified service name start as SERVING. */
  constructor(services: Iterable<string> = []) {
    this.statuses.set("", ServingStatus.SERVING);
    for (const s of services) this.statuses.set(s, ServingStatus.SERVING);
  }

  get(service: string): ServingStatus | undefined {
    return this.statuses.get(service);
  }

  entries(): [string, ServingStatus][] {
    return [...this.statuses];
  }

  /** For shutdown: every service reports NOT_SERVING, Watch streams send that and then end. */
  setAllNotServing(): void {
    for (const s of this.statuses.keys()) this.statuses.set(s, ServingStatus.NOT_SERVING);
    this.shuttingDown = true;
    this.wake();
  }

  /** Current status, then each change; ends on shutdown or when `signal` aborts. */
  async *watch(service: string, signal: AbortSignal): AsyncGenerator<ServingStatus> {
    let last: ServingStatus | undefined;
    for (;;) {
      // Unknown services are reported rather than failed, per the Watch contract.
      const status = this.statuses.get(service) ?? ServingStatus.SERVICE_UNKNOWN;
      if (status !== last) yield (last = status);
      if (this.shuttingDown || signal.aborted) return;
      await this.changed(signal);
    }
  }

  // Resolves on the next change or abort; the listener is removed either way so
  // long-lived streams don't pile listeners onto the request signal.
  private changed(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.waiters.delete(done);
        signal.removeEventListener("abort", done);
        resolve();
      };
      this.waiters.add(done);
      signal.addEventListener("abort", done, { once: true });
    });
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }
}

export function registerHealth(router: ConnectRouter, state: HealthState): void {
  router.service(Health, {
    check(req) {
      const status = state.get(req.service);
      if (status === undefined) throw new ConnectError(`unknown service ${req.service}`, Code.NotFound);
      return { status };
    },
    async *watch(req, ctx) {
      for await (const status of state.watch(req.service, ctx.signal)) yield { status };
    },
    list() {
      return { statuses: Object.fromEntries(state.entries().map(([name, status]) => [name, { status }])) };
    },
  });
}
