// Typed arrays that grow: the hot paths keep their columns (sums, keys, bytes) in typed arrays, each
// grown by at least doubling when full.

type Growable = Uint8Array<ArrayBuffer> | Int32Array<ArrayBuffer> | Uint32Array<ArrayBuffer> | Float64Array<ArrayBuffer>;

/** `from` copied into a new array of its kind, at least `length` long and twice its length, the new places holding `fill`. */
export function grown<T extends Growable>(from: T, length = 0, fill = 0): T {
  const to = new (from.constructor as new (length: number) => T)(Math.max(length, 2 * from.length));
  to.set(from as never);
  if (fill !== 0) to.fill(fill, from.length);
  return to;
}
