// The running totals of an NDJSON import (operations/import-usage.ts), from its worker's frames (FRAMES
// in usage-day-sums.ts). For a member whose events come in day order the worker sends running totals
// over the file, ready to store: a row is those totals plus the member's last stored row before the
// file, and the writing thread merges nothing (see FileRunningTotals). Any other member goes the
// general way (addToRunningTotals, from day sums; when: meetNewMembers, repeated, beginChunk), and
// running totals that still arrive for it are turned back into day sums, each minus the member's
// previous ones. This state lasts across the import's chunks.
import { TotalsByModel } from "../domain/usage-totals.js";
import { chunks, type BulkStore } from "./bulk-statements.js";
import { DaySums, forEachFrame } from "./usage-day-sums.js";
import { addPackedTotals, packedBytes, packTotals, renumberedBytes, writeRenumbered } from "./usage-sums-codec.js";
import { RowsByDay, addToRunningTotals, readStoredRows } from "./usage-running-totals.js";

/** A member of the file, once its first frame has come. */
interface ImportedMember {
  /** Whether its rows are its running totals over the file plus `base`. */
  direct: boolean;
  /** Its last stored row's totals before its first day in the file, if any. */
  base: Uint8Array | undefined;
  /** Its latest running totals over the file (packed, by file model numbers), from `latestStart` to `latestEnd`: the next ones less these are new events. */
  latest: Uint8Array | undefined;
  latestStart: number;
  latestEnd: number;
}

export class ImportRunningTotals {
  /** By member key. */
  private readonly members = new Map<number, ImportedMember>();
  /** Members with a repeat skipped, before their first frame. */
  private readonly repeating = new Set<number>();
  /** The store's count of ingestions after this import's last chunk. */
  private ingestions: number | undefined;

  /**
   * A chunk of the import begins, `ingestions` the store's count of ingestions with this chunk. When
   * another ingestion committed since the import's last chunk, it may have written rows of the
   * import's members that a direct row would now ignore: every member goes the general way.
   */
  beginChunk(ingestions: number): void {
    if (this.ingestions !== undefined && ingestions !== this.ingestions + 1) {
      for (const member of this.members.values()) member.direct = false;
    }
    this.ingestions = ingestions;
  }

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
  async add(database: BulkStore, frames: Uint8Array, memberKeys: ArrayLike<number>, modelIds: ArrayLike<number>,
    daySums: DaySums): Promise<void> {
    await this.meetNewMembers(database, frames, memberKeys);
    const rows = new RowsByDay(frames.length + (frames.length >> 3)); // rows take about the frames' bytes
    const touched = new Set<ImportedMember>();
    forEachFrame(frames, (fileMember, running, day, start, end) => {
      const memberKey = memberKeys[fileMember]!;
      const member = this.members.get(memberKey)!;
      if (!running) {
        member.direct = false;
        daySums.addPacked(memberKey, day, frames, start, end, modelIds);
        return;
      }
      if (member.direct && member.base) {
        const totals = new TotalsByModel();
        addPackedTotals(totals, frames, start, end, modelIds);
        const onto = member.base;
        rows.addWritten(memberKey, day, packedBytes(totals, onto), (out, at) => packTotals(totals, out, at, onto));
      } else if (member.direct) {
        rows.addWritten(memberKey, day, renumberedBytes(start, end), (out, at) => writeRenumbered(out, at, frames, start, end, modelIds));
      } else {
        daySums.addPacked(memberKey, day, frames, start, end, modelIds);
        if (member.latest) daySums.addPacked(memberKey, day, member.latest, member.latestStart, member.latestEnd, modelIds, -1);
      }
      member.latest = frames;
      member.latestStart = start;
      member.latestEnd = end;
      touched.add(member);
    });
    // Copied: the frames' buffer (about 100 MB for an import's usual message) need not outlive this call.
    for (const member of touched) {
      member.latest = member.latest!.slice(member.latestStart, member.latestEnd);
      member.latestEnd -= member.latestStart;
      member.latestStart = 0;
    }
    await rows.write(database);
    await addToRunningTotals(database, daySums);
  }

  /**
   * Decides the way of each member whose first frame is among these: direct, with its last stored
   * row before its first day in the file as the base, unless the store holds a row on or after that
   * day, or it repeated an event, or its first frame is a day's sums.
   */
  private async meetNewMembers(database: BulkStore, frames: Uint8Array, memberKeys: ArrayLike<number>): Promise<void> {
    const firstDays: Array<[memberKey: number, day: number]> = [];
    forEachFrame(frames, (fileMember, running, day) => {
      const memberKey = memberKeys[fileMember]!;
      if (this.members.has(memberKey)) return;
      const repeated = this.repeating.delete(memberKey);
      const direct = running && !repeated;
      this.members.set(memberKey, { direct, base: undefined, latest: undefined, latestStart: 0, latestEnd: 0 });
      if (direct) firstDays.push([memberKey, day]);
    });
    for (const chunk of chunks(firstDays)) {
      const stored = await readStoredRows(database, chunk);
      for (const [memberKey, firstDay] of chunk) {
        const rows = stored.get(memberKey) ?? [];
        const member = this.members.get(memberKey)!;
        if (rows.some((row) => row.day >= firstDay)) member.direct = false;
        else member.base = rows[0]?.totals.slice();
      }
    }
  }
}
