// The stored form of each member's sums of one day (usage_rollup_members.member_sums, on a day's all-models row), in columns a report reads
// as typed arrays without decoding them value by value:
// - a 16-byte header: the member count (uint32); one byte per column, its width in bytes (1, 2, 4 or 8: the fewest that hold the column's
//   largest value), the keys' then the five sums'; two bytes of zero; the first member's key (uint32);
// - the members in key order: each key's distance from the previous one (the first's: 0), then the five sums in SUMS order, each a column
//   of unsigned integers of its width, starting on a multiple of 8 bytes.
// Little-endian, the platform's byte order (checked below). A member's day sum is at most 2^64 - 1, as its running totals over all models are (packTotals).
import type { MemberSumsOfDay, SumColumn } from "../domain/report-cells.js";
import { exactSum, ExactSums, SUM_LIMIT, SUMS, SumLimitError } from "../domain/usage-totals.js";

const HEADER_BYTES = 16;
if (new Uint8Array(Uint16Array.of(1).buffer)[0] !== 1) throw new Error("member day sums: a big-endian platform reads them wrong");
const WIDTHS = [1, 2, 4, 8] as const;

/** `added`: member key -> its row of `sums`. Members of either, in key order, their sums added. */
export function mergeMemberSums(stored: Uint8Array | null, added: ReadonlyMap<number, number>, sums: ExactSums): Uint8Array {
  const before = stored ? decodeMemberSums(stored) : undefined;
  const addedKeys = Uint32Array.from(added.keys()).sort();
  const most = (before?.count ?? 0) + addedKeys.length;
  const keys = new Uint32Array(most);
  /** Per merged member: its position in `before` and its row of added sums (-1: none). */
  const storedAt = new Int32Array(most);
  const addedRow = new Int32Array(most);
  let count = 0;
  let next = 0;
  const take = (key: number, at: number, row = -1) => {
    keys[count] = key;
    storedAt[count] = at;
    addedRow[count++] = row;
  };
  for (let m = 0; m < (before?.count ?? 0); m++) {
    const key = before!.keys[m]!;
    while (next < addedKeys.length && addedKeys[next]! < key) take(addedKeys[next]!, -1, added.get(addedKeys[next++]!));
    take(key, m, addedKeys[next] === key ? added.get(addedKeys[next++]!) : undefined);
  }
  while (next < addedKeys.length) take(addedKeys[next]!, -1, added.get(addedKeys[next++]!));
  const columns = Array.from({ length: SUMS }, (_, i) => mergedColumn(count, storedAt, before?.columns[i], addedRow, sums, i));
  return encodeMemberSums(keys.subarray(0, count), columns);
}

/** As numbers (a Float64Array) while every value is exact as one, else as exact numbers and bigints. */
function mergedColumn(count: number, storedAt: Int32Array, stored: SumColumn | undefined, addedRow: Int32Array, sums: ExactSums,
  index: number): Float64Array | Array<number | bigint> {
  if (!(stored instanceof BigUint64Array) && !sums.anyBig) {
    const column = new Float64Array(count);
    let largest = 0;
    for (let m = 0; m < count; m++) {
      const at = storedAt[m]!;
      const row = addedRow[m]!;
      const value = (at >= 0 ? stored![at]! : 0) + (row >= 0 ? sums.values[row * SUMS + index]! : 0);
      column[m] = value;
      if (value > largest) largest = value;
    }
    if (largest <= Number.MAX_SAFE_INTEGER) return column;
  }
  return Array.from({ length: count }, (_, m) => {
    const at = storedAt[m]!;
    const row = addedRow[m]!;
    return exactSum(at >= 0 ? stored![at]! : 0, row >= 0 ? sums.exact(row, index) : 0);
  });
}

function encodeMemberSums(keys: Uint32Array, sums: ReadonlyArray<Float64Array | ReadonlyArray<number | bigint>>): Uint8Array {
  const count = keys.length;
  const steps = new Float64Array(count);
  for (let m = 1; m < count; m++) steps[m] = keys[m]! - keys[m - 1]!;
  const columns = [steps, ...sums];
  const widths = columns.map((column) => {
    let largest: number | bigint = 0;
    for (const value of column) if (value > largest) largest = value;
    if (largest > SUM_LIMIT) throw new SumLimitError();
    return WIDTHS.find((width) => width === 8 || largest < 2 ** (8 * width))!;
  });
  const layout = columnOffsets(count, widths);
  const bytes = new Uint8Array(layout.end);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, count, true);
  widths.forEach((width, i) => view.setUint8(4 + i, width));
  view.setUint32(12, keys[0] ?? 0, true);
  columns.forEach((column, i) => {
    const width = widths[i]!;
    const into = columnView(bytes.buffer, layout.offsets[i]!, count, width) as { [m: number]: number | bigint };
    // Numbers into 1, 2 or 4 bytes: one typed-array copy.
    if (column instanceof Float64Array && width < 8) (into as Uint32Array).set(column);
    else column.forEach((value, m) => { into[m] = width === 8 ? BigInt(value) : Number(value); });
  });
  return bytes;
}

function columnView(buffer: ArrayBufferLike, at: number, count: number, width: number): SumColumn {
  return width === 1 ? new Uint8Array(buffer, at, count) : width === 2 ? new Uint16Array(buffer, at, count)
    : width === 4 ? new Uint32Array(buffer, at, count) : new BigUint64Array(buffer, at, count);
}

function columnOffsets(count: number, widths: readonly number[]): { offsets: number[]; end: number } {
  let at = HEADER_BYTES;
  const offsets = widths.map((width) => {
    const offset = Math.ceil(at / 8) * 8;
    at = offset + width * count;
    return offset;
  });
  return { offsets, end: at };
}

/** Each column a typed array of its width over the stored bytes, copied once first when they do not start on a multiple of 8. */
export function decodeMemberSums(packed: Uint8Array): MemberSumsOfDay {
  if (packed.length === 0) return { count: 0, keys: new Uint32Array(0), columns: Array.from({ length: SUMS }, () => new Uint8Array(0)) };
  if (packed.length < HEADER_BYTES) throw new Error("member day sums: shorter than their header");
  const bytes = packed.byteOffset % 8 === 0 ? packed : packed.slice();
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const count = view.getUint32(0, true);
  const widths = Array.from({ length: 1 + SUMS }, (_, i) => view.getUint8(4 + i));
  if (widths.some((width) => !(WIDTHS as readonly number[]).includes(width))) throw new Error(`member day sums: unknown column widths ${widths.join(",")}`);
  const layout = columnOffsets(count, widths);
  if (layout.end !== bytes.length) throw new Error(`member day sums: ${bytes.length} bytes where ${count} members take ${layout.end}`);
  const [steps, ...columns] = widths.map((width, i) => columnView(bytes.buffer, bytes.byteOffset + layout.offsets[i]!, count, width));
  if (steps instanceof BigUint64Array) throw new Error("member day sums: key steps of 8 bytes");
  const keys = new Uint32Array(count);
  let key = view.getUint32(12, true);
  for (let m = 0; m < count; m++) keys[m] = key += steps![m]!;
  return { count, keys, columns };
}
