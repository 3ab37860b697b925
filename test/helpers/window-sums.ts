// Reads a usage query's WindowSums back as rows, for the storage tests that compare them with a reference.
import { BASIC, INPUT, OUTPUT, PAY_GO } from "../../src/domain/usage-totals.js";
import type { WindowSums } from "../../src/domain/usage-window-sums.js";

export interface SumRow {
  member_key: number;
  model_id: number;
  input_tokens: number | bigint;
  output_tokens: number | bigint;
  basic_micros: number | bigint;
  pay_go_micros: number | bigint;
}

/** Each (member, model) with events in the window; `memberKeys` are the keys the sums were read for, in that order. */
export function sumRows(sums: WindowSums, memberKeys: readonly number[]): SumRow[] {
  const rows: SumRow[] = [];
  memberKeys.forEach((memberKey, member) => {
    sums.modelIds.forEach((modelId, slot) => {
      if (!sums.hasEvents(slot, member)) return;
      rows.push({
        member_key: memberKey, model_id: modelId, input_tokens: sums.sum(slot, member, INPUT), output_tokens: sums.sum(slot, member, OUTPUT),
        basic_micros: sums.sum(slot, member, BASIC), pay_go_micros: sums.sum(slot, member, PAY_GO),
      });
    });
  });
  return rows;
}
