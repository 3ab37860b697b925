// De-duplication for batch requests: first occurrence wins, order is kept.
export function uniqueInOrder<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}
