// The usage reports' turns: at most `limit` worked on at once, since a report's memory is bounded only
// by how many run. A turn that frees goes to the waiting report of the enterprise whose last turn began
// the longest ago (one never served first), and within an enterprise to its earliest report: one that
// sends many at once delays another's by about a turn each, and no enterprise waits for good.

interface WaitingReport {
  enterpriseId: string;
  begin(): void;
}

export class ReportTurns {
  private working = 0;
  /** In arrival order. */
  private readonly waiting: WaitingReport[] = [];
  /** When each enterprise's last turn began, as a count of the turns given; kept, so that leaving the line earns no earlier turn. */
  private readonly lastTurn = new Map<string, number>();
  private turnsGiven = 0;

  constructor(private readonly limit: number) {}

  /** Reports being worked on, and reports waiting for their turn (the service's metrics). */
  load(): { running: number; waiting: number } {
    return { running: this.working, waiting: this.waiting.length };
  }

  /**
   * Runs `work` in a turn of the enterprise's. `signal` ending while it waits takes it out of the line (rejected with the signal's
   * reason); once working, it keeps its turn until `work` settles, whatever the signal, so the turns bound the reports in memory.
   */
  async run<T>(enterpriseId: string, signal: AbortSignal, work: () => Promise<T>): Promise<T> {
    signal.throwIfAborted();
    if (this.working < this.limit && this.waiting.length === 0) this.begin(enterpriseId);
    else await this.inLine(enterpriseId, signal);
    try {
      return await work();
    } finally {
      this.working--;
      this.giveTurn();
    }
  }

  private inLine(enterpriseId: string, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const leave = () => {
        this.waiting.splice(this.waiting.indexOf(report), 1);
        reject(signal.reason);
      };
      const report: WaitingReport = {
        enterpriseId,
        begin: () => {
          signal.removeEventListener("abort", leave);
          this.begin(enterpriseId);
          resolve();
        },
      };
      signal.addEventListener("abort", leave, { once: true });
      this.waiting.push(report);
    });
  }

  private giveTurn(): void {
    const last = (report: WaitingReport) => this.lastTurn.get(report.enterpriseId) ?? -1;
    let chosen: number | undefined;
    for (let i = 0; i < this.waiting.length; i++) {
      if (chosen === undefined || last(this.waiting[i]!) < last(this.waiting[chosen]!)) chosen = i;
    }
    if (chosen !== undefined) this.waiting.splice(chosen, 1)[0]!.begin();
  }

  private begin(enterpriseId: string): void {
    this.working++;
    this.lastTurn.set(enterpriseId, this.turnsGiven++);
  }
}
