/**
 * A seeded pseudo-random source (mulberry32), so a chaos run's choices (kill moments,
 * consumer behaviour, injected faults) can be replayed from the seed it prints.
 */

export interface Random {
  /** Uniform in [0, 1). */
  next(): number;
  /** An integer in [min, max]. */
  int(min: number, max: number): number;
  chance(probability: number): boolean;
  /**
   * An independent source derived from this one: each producer, consumer and fault stream takes
   * its own, so adding one does not shift the choices of the others.
   */
  fork(): Random;
}

export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (probability) => next() < probability,
    fork: () => seededRandom(Math.floor(next() * 4_294_967_296)),
  };
}

/** A seed for a run that was not given one. */
export function newSeed(): number {
  return Math.floor(Math.random() * 2 ** 31);
}
