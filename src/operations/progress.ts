// A long operation's progress, as the CLI's bars (cli/progress-bar.ts) show it: the import's bytes and events, the export's days and
// rows, the rebuild's events.
export interface Progress {
  start(total: number): void;
  /** `done` of the total; `count`: what the bar counts beside it, when not `done`. */
  update(done: number, count?: number): void;
  stop(): void;
}
