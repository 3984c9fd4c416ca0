import { inspect, isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import type { ReceivedMessage } from '../types.js';
import { type ConsumerUnderTest, deliver, type Fault, message } from './deliveries.js';

/**
 * The redelivery conformance kit: checks, with fast-check, that a consumer's handler leaves the
 * same effect however leaseq delivers its messages: at least once, after crashes, as two copies
 * at once, late, and in a key's order. A failure is shrunk to the smallest set of messages that
 * shows it and reported with the check, the scenario and both effects.
 */

export type RedeliveryCheck =
  /** Delivered two or three times, a message leaves the effect of one delivery. */
  | 'repeat'
  /** A crash at each call of the handler (before it, after it) or before the ack, then the redelivery. */
  | 'crash'
  /** Two copies at once (a lease that ran out under a slow handler), their calls interleaved. */
  | 'concurrent'
  /** A delivery and its redelivery together send downstream the idempotency keys of one delivery. */
  | 'outbound-keys'
  /** An ordered queue's keys keep their order through failed calls and redeliveries. */
  | 'order'
  /** A copy that comes at the end of the redelivery horizon is still recognised. */
  | 'horizon'
  /** A message id seen before with another payload is refused, and changes nothing. */
  | 'conflict';

export interface Environment {
  /** The kit's clock, ms: what a handler's dedup store must read, so the kit can move time on. */
  now(): number;
}

export interface RedeliveryOptions<T> {
  /** A fresh consumer (its own store) for each scenario. */
  setup(env: Environment): ConsumerUnderTest<T>;
  /** The payloads of sample messages. */
  payloads: fc.Arbitrary<T>;
  /** The queue is ordered: messages have keys, and the `order` check runs. */
  ordered?: boolean;
  /**
   * How late a copy may come: a dead letter can be redriven until the DLQ's retention ends, so
   * by default the queue's retention plus its DLQ retention, at leaseq's defaults (24 h + 336 h).
   */
  horizonSeconds?: number;
  /** Which checks; default all of them (`order` only on an ordered queue). */
  checks?: readonly RedeliveryCheck[];
  /** Sets of messages tried per check; default 50. */
  runs?: number;
}

const DEFAULT_HORIZON_SECONDS = (24 + 336) * 3600;
const KEYS = ['k1', 'k2'];

export class RedeliveryConformanceError extends Error {
  constructor(
    readonly check: RedeliveryCheck,
    detail: string,
  ) {
    super(`redelivery conformance: ${check} failed\n${detail}`);
    this.name = 'RedeliveryConformanceError';
  }
}

interface Sample<T> {
  key: string | null;
  payload: T;
}

/**
 * Runs each check on the consumer `setup` builds; rejects with a RedeliveryConformanceError for
 * the first that fails. Works under any test runner: it is one promise.
 */
export async function checkRedelivery<T>(options: RedeliveryOptions<T>): Promise<void> {
  const all: RedeliveryCheck[] = [
    'repeat',
    'outbound-keys',
    'crash',
    'concurrent',
    'order',
    'horizon',
    'conflict',
  ];
  const checks = (options.checks ?? all).filter((c) => c !== 'order' || options.ordered);
  for (const check of checks) await runCheck(check, options);
}

async function runCheck<T>(check: RedeliveryCheck, options: RedeliveryOptions<T>): Promise<void> {
  const samples = fc.array(
    fc.record({
      key: options.ordered ? fc.constantFrom(...KEYS) : fc.constant(null),
      payload: options.payloads,
    }),
    { minLength: 1, maxLength: 4 },
  );
  const property =
    check === 'concurrent' || check === 'order'
      ? fc.asyncProperty(samples, fc.scheduler(), fc.nat(), (s, scheduler, failing) =>
          scenario(check, options, s, { scheduler, failing }),
        )
      : check === 'conflict'
        ? fc.asyncProperty(samples, options.payloads, (s, other) => conflict(options, s, other))
        : fc.asyncProperty(samples, (s) => scenario(check, options, s));
  const details = await fc.check(property as fc.IAsyncProperty<unknown[]>, { numRuns: options.runs ?? 50 });
  if (!details.failed) return;
  const cause =
    details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  throw new RedeliveryConformanceError(
    check,
    `${cause}\nsmallest messages that show it (after ${details.numShrinks} shrinks): ${inspect(details.counterexample?.[0], { depth: 4 })}` +
      `\nreplay with fast-check: seed ${details.seed}, path "${details.counterexample ? details.counterexamplePath : ''}"`,
  );
}

/** A world: one consumer, its clock, and the messages of a scenario. */
class World<T> {
  private clock = Date.UTC(2030, 0, 1);
  readonly consumer: ConsumerUnderTest<T>;

  constructor(setup: RedeliveryOptions<T>['setup']) {
    this.consumer = setup({ now: () => this.clock });
  }

  at(samples: Sample<T>[], i: number, attempt = 1): ReceivedMessage<T> {
    const s = samples[i] as Sample<T>;
    return message(`m-${i + 1}`, s.key, s.payload, attempt, this.clock);
  }

  later(seconds: number): void {
    this.clock += seconds * 1000;
  }

  effect(): unknown {
    return structuredClone(this.consumer.effect());
  }
}

/** The effect of each message delivered once, in order, with no fault: what every scenario must leave. */
async function reference<T>(options: RedeliveryOptions<T>, samples: Sample<T>[]) {
  const world = new World(options.setup);
  const calls: number[] = [];
  /** Distinct idempotency keys each message's delivery sent. */
  const keys: number[] = [];
  for (let i = 0; i < samples.length; i++) {
    const before = world.consumer.outboundKeys?.().length ?? 0;
    const delivered = await deliver(world.consumer, [world.at(samples, i)]);
    if (delivered.error !== undefined || !delivered.acked.length)
      throw new Error(
        `message m-${i + 1}, delivered once with no fault, failed: ${describe(delivered.error)}`,
      );
    calls.push(delivered.calls);
    keys.push(new Set(world.consumer.outboundKeys?.().slice(before)).size);
  }
  return { effect: world.effect(), calls, keys };
}

async function scenario<T>(
  check: RedeliveryCheck,
  options: RedeliveryOptions<T>,
  samples: Sample<T>[],
  /** Interleaves calls; `failing` picks the call that fails in an ordered delivery (or none). */
  { scheduler, failing = 0 }: { scheduler?: fc.Scheduler; failing?: number } = {},
): Promise<void> {
  const expected = await reference(options, samples);
  const same = (world: World<T>, what: string) => {
    const effect = world.effect();
    if (!isDeepStrictEqual(effect, expected.effect))
      throw new Error(
        `${what}\n  effect:   ${show(effect)}\n  expected: ${show(expected.effect)} (each message once)`,
      );
  };
  /** Delivers messages [from, to) once each, in order, with no fault. */
  const clean = async (world: World<T>, from: number, to: number) => {
    for (let i = from; i < to; i++) await deliverUntilAcked(world, [world.at(samples, i)]);
  };

  if (check === 'repeat') {
    const world = new World(options.setup);
    await clean(world, 0, samples.length);
    for (let i = 0; i < samples.length; i++) await deliverUntilAcked(world, [world.at(samples, i, 2)]);
    await deliverUntilAcked(world, [world.at(samples, 0, 3)]);
    same(world, 'each message delivered again after all of them were acked');
    return;
  }
  if (check === 'horizon') {
    const world = new World(options.setup);
    await clean(world, 0, samples.length);
    const horizon = options.horizonSeconds ?? DEFAULT_HORIZON_SECONDS;
    world.later(horizon);
    for (let i = 0; i < samples.length; i++) await deliverUntilAcked(world, [world.at(samples, i, 2)]);
    same(world, `each message delivered again ${hours(horizon)} later (the redelivery horizon)`);
    return;
  }
  if (check === 'crash' || check === 'outbound-keys') {
    for (let j = 0; j < samples.length; j++) {
      const calls = expected.calls[j] ?? 0;
      // Every point a crash can come: before and after each call, and between the return and the ack.
      const faults: Fault[] = [
        ...Array.from({ length: calls }, (_, at): Fault[] =>
          check === 'crash'
            ? [
                { kind: 'crash', at, when: 'before' },
                { kind: 'crash', at, when: 'after' },
              ]
            : [{ kind: 'crash', at, when: 'after' }],
        ).flat(),
        { kind: 'crash', when: 'before-ack' },
      ];
      for (const fault of faults) {
        const world = new World(options.setup);
        await clean(world, 0, j);
        const keysBefore = world.consumer.outboundKeys?.().length ?? 0;
        await deliver(world.consumer, [world.at(samples, j)], { fault });
        const firstKeys = world.consumer.outboundKeys?.().slice(keysBefore) ?? [];
        await deliverUntilAcked(world, [world.at(samples, j, 2)]);
        const retryKeys = world.consumer.outboundKeys?.().slice(keysBefore + firstKeys.length) ?? [];
        const what = `m-${j + 1} crashed ${crashPoint(fault, calls)}, then was delivered again`;
        if (check === 'outbound-keys') {
          // Both attempts together send the keys of one delivery: a key made per attempt sends more.
          const once = expected.keys[j] ?? 0;
          if (new Set([...firstKeys, ...retryKeys]).size > once)
            throw new Error(
              `${what}: its attempts sent ${show(firstKeys)} and then ${show(retryKeys)}, where one delivery sends ${once} idempotency key(s): keys must not change between attempts`,
            );
          continue;
        }
        await clean(world, j + 1, samples.length);
        same(world, what);
      }
    }
    return;
  }
  if (check === 'concurrent' && scheduler) {
    const world = new World(options.setup);
    for (let i = 0; i < samples.length; i++) {
      const copies = [1, 2].map((attempt) =>
        deliver(world.consumer, [world.at(samples, i, attempt)], {
          scheduler,
          label: `m-${i + 1} copy ${attempt}`,
        }),
      );
      const results = await scheduler.waitFor(Promise.all(copies));
      if (!results.some((r) => r.acked.length)) await deliverUntilAcked(world, [world.at(samples, i, 3)]);
    }
    same(
      world,
      `each message ran as two copies at once, their calls interleaved as scheduled:\n${scheduler.report().map(show).join('\n')}`,
    );
    return;
  }
  if (check === 'order' && scheduler) {
    // The whole set as one delivery (a key's messages in order), a call failing somewhere in it.
    const world = new World(options.setup);
    const total = expected.calls.reduce((sum, n) => sum + n, 0);
    const failAt = failing % (total + 1) < total ? failing % (total + 1) : undefined;
    let pending = samples.map((_, i) => world.at(samples, i));
    const fault: Fault | undefined = failAt === undefined ? undefined : { kind: 'fail', at: failAt };
    for (let round = 1; pending.length && round <= 10; round++) {
      const delivered = deliver(world.consumer, pending, {
        scheduler,
        label: `delivery ${round}`,
        ...(round === 1 && fault ? { fault } : {}),
      });
      const { acked } = await scheduler.waitFor(delivered);
      const done = new Set(acked.map((m) => m.message_id));
      pending = pending.filter((m) => !done.has(m.message_id)).map((m) => ({ ...m, attempt: m.attempt + 1 }));
    }
    same(
      world,
      `the messages came as one delivery${fault ? ` whose call ${(failAt as number) + 1} failed once` : ''}, what was not acked delivered again`,
    );
  }
}

/** A message whose id the consumer saw with one payload comes with another: it must be refused. */
async function conflict<T>(options: RedeliveryOptions<T>, samples: Sample<T>[], other: T): Promise<void> {
  const first = samples[0] as Sample<T>;
  if (JSON.stringify(first.payload) === JSON.stringify(other)) return;
  const world = new World(options.setup);
  await deliverUntilAcked(world, [world.at(samples, 0)]);
  const before = world.effect();
  const delivered = await deliver(world.consumer, [
    message('m-1', first.key, other, 1, Date.UTC(2030, 0, 2)),
  ]);
  const after = world.effect();
  if (delivered.acked.length)
    throw new Error(
      `m-1 came again with another payload (${show(other)} after ${show(first.payload)}) and was acked: it must be refused`,
    );
  if (!isDeepStrictEqual(before, after))
    throw new Error(
      `m-1 came again with another payload and was refused, but changed the effect\n  effect:   ${show(after)}\n  expected: ${show(before)}`,
    );
}

/** Delivers until acked, as the queue would redeliver what failed (at most 10 attempts). */
async function deliverUntilAcked<T>(world: World<T>, messages: ReceivedMessage<T>[]): Promise<void> {
  let last: unknown;
  for (let attempt = 0; attempt < 10; attempt++) {
    const delivered = await deliver(
      world.consumer,
      messages.map((m) => ({ ...m, attempt: m.attempt + attempt })),
    );
    if (delivered.acked.length === messages.length) return;
    last = delivered.error;
  }
  throw new Error(
    `${messages.map((m) => m.message_id).join(', ')} failed 10 deliveries with no fault: ${describe(last)}`,
  );
}

function crashPoint(fault: Fault, calls: number): string {
  if (fault.kind === 'crash' && fault.when === 'before-ack')
    return 'after its handler returned, before the ack';
  if (fault.kind !== 'crash') return '';
  return `${fault.when} call ${fault.at + 1} of ${calls}`;
}

function hours(seconds: number): string {
  return `${Math.round(seconds / 3600)} h`;
}

function show(value: unknown): string {
  return inspect(value, { depth: 6, breakLength: Number.POSITIVE_INFINITY });
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : show(err);
}
