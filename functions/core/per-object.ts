/**
 * `make` computed once per object and kept as long as the object lives (a WeakMap): a tenant's
 * rules, a schema's compiled validator, an instance's verifier.
 */
export function perObject<K extends object, V>(make: (key: K) => V): (key: K) => V {
  const made = new WeakMap<K, V>();
  return (key) => {
    if (made.has(key)) return made.get(key) as V;
    const value = make(key);
    made.set(key, value);
    return value;
  };
}
