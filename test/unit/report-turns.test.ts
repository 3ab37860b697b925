// The usage reports' turns (ReportTurns): a freed turn goes to the enterprise served least recently, an enterprise's own reports in
// the order they came; a report that leaves the line or fails gives its turn on.
import { describe, expect, it } from "vitest";
import { ReportTurns } from "../../src/operations/report-turns.js";

/** A report that works until released. */
function held() {
  let release = () => {};
  const done = new Promise<void>((resolve) => (release = resolve));
  return { release, work: () => done };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("ReportTurns", () => {
  it("gives a freed turn to the enterprise served least recently: another's reports do not wait for all of one enterprise's", async () => {
    const turns = new ReportTurns(1);
    const ran: string[] = [];
    const first = held();
    const running = [turns.run("a", new AbortController().signal, () => (ran.push("a1"), first.work()))];
    for (const name of ["a2", "a3", "a4"]) running.push(turns.run("a", new AbortController().signal, async () => void ran.push(name)));
    running.push(turns.run("b", new AbortController().signal, async () => void ran.push("b1")));
    expect(turns.load()).toStrictEqual({ running: 1, waiting: 4 });
    first.release();
    await Promise.all(running);
    expect(ran).toStrictEqual(["a1", "b1", "a2", "a3", "a4"]);
    expect(turns.load()).toStrictEqual({ running: 0, waiting: 0 });
  });

  it("an enterprise that keeps two reports in line at all times does not starve another's third report", async () => {
    const turns = new ReportTurns(1);
    const ran: string[] = [];
    const first = held();
    const a = [turns.run("a", new AbortController().signal, () => (ran.push("a1"), first.work()))];
    for (const name of ["a2", "a3"]) a.push(turns.run("a", new AbortController().signal, async () => void ran.push(name)));
    // b sends its next report whenever one of its two ends, for 20 reports.
    let sent = 0;
    const b = async (): Promise<void> => {
      while (sent < 20) {
        const name = `b${++sent}`;
        await turns.run("b", new AbortController().signal, async () => void ran.push(name));
      }
    };
    const loops = [b(), b()];
    first.release();
    await Promise.all([...a, ...loops]);
    // a's reports each wait for one of b's at most.
    expect(ran.indexOf("a3")).toBeLessThan(6);
    expect(ran.filter((name) => name.startsWith("a"))).toStrictEqual(["a1", "a2", "a3"]);
  });

  it("an enterprise's reports keep their order when earlier ones leave the line, and a report that leaves or fails gives the turn on", async () => {
    const turns = new ReportTurns(1);
    const ran: string[] = [];
    const first = held();
    const b = turns.run("b", new AbortController().signal, () => (ran.push("b1"), first.work()));
    const leaving = [new AbortController(), new AbortController()];
    const left = leaving.map((controller, i) => turns.run("a", controller.signal, async () => void ran.push(`a${i + 1}`)).catch((error: unknown) => error));
    const a3 = turns.run("a", new AbortController().signal, async () => void ran.push("a3"));
    for (const controller of leaving) controller.abort(new Error("the call ended"));
    expect((await Promise.all(left)).map((error) => (error as Error).message)).toStrictEqual(["the call ended", "the call ended"]);
    const a4 = turns.run("a", new AbortController().signal, async () => void ran.push("a4"));
    const failing = turns.run("c", new AbortController().signal, async () => {
      ran.push("c1");
      throw new Error("a report that fails");
    }).catch((error: unknown) => (error as Error).message);
    expect(turns.load()).toStrictEqual({ running: 1, waiting: 3 });
    first.release();
    await Promise.all([b, a3, a4]);
    expect(await failing).toBe("a report that fails");
    await tick();
    // a and c were never served: a3 came first; then c, served less recently than a.
    expect(ran).toStrictEqual(["b1", "a3", "c1", "a4"]);
    expect(turns.load()).toStrictEqual({ running: 0, waiting: 0 });
  });

  it("a call ended before its turn is refused at once, with the signal's reason", async () => {
    const turns = new ReportTurns(1);
    const controller = new AbortController();
    controller.abort(new Error("gone"));
    await expect(turns.run("a", controller.signal, async () => "ran")).rejects.toThrow("gone");
    expect(turns.load()).toStrictEqual({ running: 0, waiting: 0 });
  });
});
