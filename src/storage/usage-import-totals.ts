// The running totals of an NDJSON import (operations/import-usage.ts), from its worker's frames
// (FRAMES in domain/usage-day-sums.ts). For a member whose events come in day order the worker
// sends running totals over the file, ready to store: a row is then those totals plus the member's
// last stored row before the file (usually none), and the writing thread merges nothing (merging
// day sums into running totals cost it about 9% of an import). A member that cannot go that way
// goes the general way (addToRunningTotals, from day sums):
// - its events left day order in the file (the worker then sends its day sums);
// - the store holds a row of its on or after its first day in the file (a file that overlaps one
//   imported before);
// - one of its events was a repeat, skipped (its sums include the repeat: taken away as day sums).
// Running totals that arrive for such a member are turned back into day sums: each minus the
// member's running totals that came before it.
import { DaySums, forEachFrame } from "../domain/usage-day-sums.js";
import { SUMS, TotalsByModel, writeVarint } from "../domain/usage-totals.js";
import type { Database } from "./database.js";
import { RowsByDay, addToRunningTotals, chunks, readStoredRows } from "./usage-running-totals.js";

/** A member of the file, once its first frame has come. */
interface ImportedMember {
  /** Whether its rows are its running totals over the file plus `base`. */
  direct: boolean;
  /** Its last stored row's bare totals before its first day in the file, if any. */
  base: Uint8Array | undefined;
  /** Its latest running totals over the file (packed, by file model numbers): the next ones less these are new events. */
  latest: { bytes: Uint8Array; start: number; end: number } | undefined;
}

export class ImportRunningTotals {
  /** By member key. */
  private readonly members = new Map<number, ImportedMember>();
  /** Members with a repeat skipped, before their first frame. */
  private readonly repeating = new Set<number>();

  constructor(private readonly database: Pick<Database, "db" | "dialect" | "direct">) {}

  /** One of the member's events was a repeat and skipped (and taken away from the day sums): it goes the general way. */
  repeated(memberKey: number): void {
    const member = this.members.get(memberKey);
    if (member) member.direct = false;
    else this.repeating.add(memberKey);
  }

  /**
   * Adds frames of sums to the stored running totals, their member and model numbers mapped to
   * member keys and model ids by `memberKeys` and `modelIds`. `daySums` holds the day sums already
   * taken away for repeats; it is drained into the stored rows here.
   */
  async add(frames: Uint8Array, memberKeys: ArrayLike<number>, modelIds: ArrayLike<number>, daySums: DaySums): Promise<void> {
    await this.meetNewMembers(frames, memberKeys);
    const rows = new RowsByDay();
    const touched = new Set<ImportedMember>();
    forEachFrame(frames, (fileMember, running, day, start, end) => {
      const memberKey = memberKeys[fileMember]!;
      const member = this.members.get(memberKey)!;
      if (!running) {
        member.direct = false;
        daySums.addPacked(memberKey, day, frames, start, end, modelIds);
        return;
      }
      if (member.direct) {
        rows.add(memberKey, day, runningCell(memberKey, frames, start, end, modelIds, member.base));
      } else {
        daySums.addPacked(memberKey, day, frames, start, end, modelIds);
        const earlier = member.latest;
        if (earlier) daySums.addPacked(memberKey, day, earlier.bytes, earlier.start, earlier.end, modelIds, -1);
      }
      member.latest = { bytes: frames, start, end };
      touched.add(member);
    });
    // Copied: the frames' buffer (about 100 MB for an import's usual message) need not outlive this call.
    for (const member of touched) {
      const { bytes, start, end } = member.latest!;
      member.latest = { bytes: bytes.slice(start, end), start: 0, end: end - start };
    }
    await rows.write(this.database);
    await addToRunningTotals(this.database, daySums);
  }

  /**
   * Decides the way of each member whose first frame is among these: direct, with its last stored
   * row before its first day in the file as the base, unless the store holds a row on or after that
   * day, or it repeated an event, or its first frame is a day's sums.
   */
  private async meetNewMembers(frames: Uint8Array, memberKeys: ArrayLike<number>): Promise<void> {
    const firstDays: Array<[memberKey: number, day: number]> = [];
    forEachFrame(frames, (fileMember, running, day) => {
      const memberKey = memberKeys[fileMember]!;
      if (this.members.has(memberKey)) return;
      const repeated = this.repeating.delete(memberKey);
      const direct = running && !repeated;
      this.members.set(memberKey, { direct, base: undefined, latest: undefined });
      if (direct) firstDays.push([memberKey, day]);
    });
    for (const chunk of chunks(firstDays)) {
      const stored = await readStoredRows(this.database, chunk);
      for (const [memberKey, firstDay] of chunk) {
        const rows = stored.get(memberKey) ?? [];
        const member = this.members.get(memberKey)!;
        if (rows.some((row) => row.day >= firstDay)) member.direct = false;
        else member.base = rows[0]?.totals.slice();
      }
    }
  }
}

/**
 * A row's cell (see CELL FRAMES in usage-totals.ts): running totals over the file (packed, by file
 * model numbers) with their models numbered by id, plus `base` (bare packed totals) if given. A
 * view of a reused buffer, valid until the next call.
 */
function runningCell(memberKey: number, frames: Uint8Array, start: number, end: number, modelIds: ArrayLike<number>,
  base: Uint8Array | undefined): Uint8Array {
  if (base) {
    const totals = new TotalsByModel();
    totals.addPacked(frames, start, end, modelIds);
    return totals.packCell(memberKey, base);
  }
  // The entries copied as they are but for the model number: no decoding, no packing. An entry is
  // at least 6 bytes, and its model number grows by at most 4 (to a 32-bit id): twice the room is enough.
  const out = scratchFor(CELL_HEADER_ROOM + 2 * (end - start));
  let at = CELL_HEADER_ROOM;
  let p = start;
  while (p < end) {
    let model = 0;
    let scale = 1;
    for (;;) {
      const byte = frames[p++]!;
      model += (byte & 0x7f) * scale;
      scale *= 128;
      if (!(byte >= 0x80)) break;
    }
    at = writeVarint(out, at, modelIds[model]!);
    for (let i = 0; i < SUMS; i++) {
      let byte;
      do {
        byte = frames[p++]!;
        out[at++] = byte;
      } while (byte >= 0x80);
    }
  }
  const header = writeVarint(cellHeader, writeVarint(cellHeader, 0, memberKey), at - CELL_HEADER_ROOM);
  out.set(cellHeader.subarray(0, header), CELL_HEADER_ROOM - header);
  return out.subarray(CELL_HEADER_ROOM - header, at);
}

/** Room for a cell's header: two varints below 2^53. */
const CELL_HEADER_ROOM = 16;
const cellHeader = new Uint8Array(CELL_HEADER_ROOM);

let scratch = new Uint8Array(1 << 12);
function scratchFor(bytes: number): Uint8Array {
  if (scratch.length < bytes) scratch = new Uint8Array(bytes * 2);
  return scratch;
}
