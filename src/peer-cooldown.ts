// Client addresses whose HTTP/2 session was ended for abuse (a rapid-reset flood) have their new
// connections refused for a cool-down: a flooder that reconnects at once then costs an accept and a
// close, not a session and thousands of streams. Bounded: past `maxPeers` the oldest entry goes.
export class PeerCooldown {
  /** Address -> when its cool-down ends (ms since the epoch), oldest first. */
  private readonly until = new Map<string, number>();

  constructor(private readonly cooldownMs: number, private readonly maxPeers = 10_000) {}

  /** Starts (or restarts) the cool-down of `address`. */
  start(address: string | undefined, now = Date.now()): void {
    if (!address) return;
    this.until.delete(address); // re-inserted last: the Map's order stays oldest first
    this.until.set(address, now + this.cooldownMs);
    if (this.until.size > this.maxPeers) this.until.delete(this.until.keys().next().value!);
  }

  /** Whether a new connection from `address` is refused now. */
  refuses(address: string | undefined, now = Date.now()): boolean {
    if (!address) return false;
    const until = this.until.get(address);
    if (until === undefined) return false;
    if (until > now) return true;
    this.until.delete(address);
    return false;
  }
}
