// Maps whose values are lists, filled a value at a time.

/** Appends `value` to the list of `key`, made when it has none. */
export function pushTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  (map.get(key) ?? map.set(key, []).get(key)!).push(value);
}
