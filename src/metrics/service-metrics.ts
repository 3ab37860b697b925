// The service's Prometheus metrics: one Registry per running service (never prom-client's global
// default registry), the process's default metrics, and what the call path, usage ingestion and the
// store report to it. Names and meanings: docs/operations.md, "Metrics".
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Transport } from "../interceptors/call-log.js";
import type { IngestionObserver } from "../operations/record-usage.js";
import type { StoreObserver } from "../storage/database.js";
import type { StoreFaultKind } from "../storage/store-faults.js";

/** Why the store failed a call: busy, full or unreachable (503), or another error of the database (500). */
export type StoreErrorKind = StoreFaultKind | "error";

/** One finished call, as the metrics count it. */
export interface CallOutcome {
  /** `/<package>.<Service>/<Method>`. */
  procedure: string;
  transport: Transport;
  /** The ErrorCode number of the outcome (0 for success, 4990 for a call its caller cancelled). */
  code: number;
  seconds: number;
  storeError?: StoreErrorKind;
}

/** Call latency buckets, in seconds: from a cached lookup to the longest deadline (REQUEST_TIMEOUT_MS, 60 s). */
const CALL_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Write-lock wait buckets, in seconds: up to past the default busy timeout (STORE_BUSY_TIMEOUT_MS, 5 s). */
const LOCK_WAIT_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class ServiceMetrics implements StoreObserver {
  readonly registry = new Registry();
  private readonly calls: Counter<"procedure" | "transport" | "code">;
  private readonly callSeconds: Histogram<"procedure" | "transport">;
  private readonly eventsRecorded: Counter;
  private readonly eventsDuplicate: Counter;
  private readonly storeErrors: Counter<"kind">;
  private readonly lockWaits: Counter<"outcome">;
  private readonly lockWaitSeconds: Histogram;
  private readonly rollupsDeferrals: Counter<"reason">;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.calls = new Counter({
      name: "enterprise_admin_calls_total", help: "Calls answered, by procedure, transport and vendor code (0 success; docs/errors.md).",
      labelNames: ["procedure", "transport", "code"], registers,
    });
    this.callSeconds = new Histogram({
      name: "enterprise_admin_call_duration_seconds", help: "Time from a call's request to the end of its answer (a stream's last message).",
      labelNames: ["procedure", "transport"], buckets: CALL_BUCKETS, registers,
    });
    this.eventsRecorded = new Counter({
      name: "enterprise_admin_usage_events_recorded_total", help: "Usage events stored by RecordUsageEvents calls of this process.", registers,
    });
    this.eventsDuplicate = new Counter({
      name: "enterprise_admin_usage_events_duplicate_total", help: "Usage events of RecordUsageEvents calls whose event_id was stored already (not stored again).", registers,
    });
    this.storeErrors = new Counter({
      name: "enterprise_admin_store_errors_total", help: "Calls failed by the store: busy past the busy timeout, full or unreachable (503), or another database error (500).",
      labelNames: ["kind"], registers,
    });
    this.lockWaits = new Counter({
      name: "enterprise_admin_store_lock_waits_total", help: "Writes that found the store's write lock held and waited: acquired, or gave up at the busy timeout (timeout).",
      labelNames: ["outcome"], registers,
    });
    this.lockWaitSeconds = new Histogram({
      name: "enterprise_admin_store_lock_wait_seconds", help: "How long the writes that waited for the store's write lock waited.",
      buckets: LOCK_WAIT_BUCKETS, registers,
    });
    this.rollupsDeferrals = new Counter({
      name: "enterprise_admin_usage_rollups_deferred_total",
      help: "Reports, daily trends and exports that could not add pending usage events to the rollups first (busy past the busy timeout, or full) and read the raw events instead.",
      labelNames: ["reason"], registers,
    });
    // Every series that exists from the start is shown at 0, so a rate over a fresh server is defined.
    for (const kind of ["busy", "full", "unreachable", "error"] as const) this.storeErrors.inc({ kind }, 0);
    for (const outcome of ["acquired", "timeout"] as const) this.lockWaits.inc({ outcome }, 0);
    for (const reason of ["busy", "full"] as const) this.rollupsDeferrals.inc({ reason }, 0);
  }

  call(outcome: CallOutcome): void {
    const { procedure, transport } = outcome;
    this.calls.inc({ procedure, transport, code: String(outcome.code) });
    this.callSeconds.observe({ procedure, transport }, outcome.seconds);
    if (outcome.storeError) this.storeErrors.inc({ kind: outcome.storeError });
  }

  /** For recordUsage: a committed batch. */
  readonly ingested: IngestionObserver = ({ recorded, duplicates }) => {
    this.eventsRecorded.inc(recorded);
    this.eventsDuplicate.inc(duplicates);
  };

  lockWaited(seconds: number, acquired: boolean): void {
    this.lockWaits.inc({ outcome: acquired ? "acquired" : "timeout" });
    this.lockWaitSeconds.observe(seconds);
  }

  rollupsDeferred(reason: Parameters<StoreObserver["rollupsDeferred"]>[0]): void {
    this.rollupsDeferrals.inc({ reason });
  }

  /** The usage reports of this process being worked on and waiting their turn (REPORT_MAX_RUNNING), read at each scrape. */
  watchReports(read: () => { running: number; waiting: number }): void {
    const registers = [this.registry];
    new Gauge({ name: "enterprise_admin_usage_reports_running", help: "Usage reports this process is working on (at most REPORT_MAX_RUNNING).",
      registers, collect() { this.set(read().running); } });
    new Gauge({ name: "enterprise_admin_usage_reports_waiting", help: "Usage reports waiting for their turn, REPORT_MAX_RUNNING being worked on.",
      registers, collect() { this.set(read().waiting); } });
  }

  /**
   * The store's count of committed ingestions, read at each scrape (`read`): it moves with every
   * writer of the store, each chunk of a CLI import included. When the read fails there is no sample.
   */
  watchIngestions(read: () => Promise<number>): void {
    new Gauge({
      name: "enterprise_admin_store_usage_ingestions",
      help: "Usage ingestions committed to the store by every process: RecordUsageEvents batches and each chunk of `import usage`. Read from the store at scrape.",
      registers: [this.registry],
      async collect() {
        try {
          this.set(await read());
        } catch {
          this.remove();
        }
      },
    });
  }
}
