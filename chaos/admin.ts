import { setTimeout as sleep } from 'node:timers/promises';
import { isRetryable } from '../client/errors.js';
import {
  LeaseqClient,
  MessageNotFoundError,
  NotFoundError,
  type Redrive,
  type Replay,
} from '../client/index.js';
import { Transport } from '../client/transport.js';
import { lifeOf } from './history.js';

/**
 * The operator's calls a chaos run needs: starting a redrive or a replay, the whole DLQ, releasing
 * parked keys, where a message is, and what a queue still holds. They retry what may pass later
 * (the client's `isRetryable`), since a run's verdict must not hang on one lost answer.
 */

/**
 * How long and how often a call tries again what may pass later. A restart takes seconds (more on
 * a loaded machine, and a restart that reshards more again), and restarts may follow one another
 * with 2 s of service between (harness.ts): a call tries often, for minutes.
 */
const PATIENCE = { forMs: 5 * 60_000, everyMs: 500 };
/** A start answered with an error no wait fixes is sent again this often at most. */
const START_ATTEMPTS = 8;

async function patiently<T>(call: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + PATIENCE.forMs;
  for (;;) {
    try {
      return await call();
    } catch (err) {
      if (!isRetryable(err) || Date.now() > deadline) throw err;
      await sleep(PATIENCE.everyMs);
    }
  }
}

export class AdminApi {
  private readonly client: LeaseqClient;
  private readonly transport: Transport;

  constructor(baseUrl: string, adminKey: string) {
    this.client = new LeaseqClient({ baseUrl, apiKey: adminKey, maxRetries: 0 });
    this.transport = new Transport({ baseUrl, apiKey: adminKey, fetch: globalThis.fetch, timeoutMs: 10_000 });
  }

  /** Every dead letter of the queue, all pages: its life (history.ts `lifeOf`) → when it died. */
  async deadLetters(queue: string): Promise<Map<string, number>> {
    const dead = new Map<string, number>();
    let cursor: string | undefined;
    do {
      const from = cursor;
      const page = await patiently(() =>
        this.client.dlq(queue, { limit: 100, ...(from ? { cursor: from } : {}) }),
      );
      for (const m of page.messages) dead.set(lifeOf(m.message_id, m.replay_id), Date.parse(m.dead_at));
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    return dead;
  }

  /**
   * Releases every parked key of an ordered queue without its dead message (audited), as an
   * operator would: the held messages behind it must still end acked. Answers how many.
   */
  async skipParkedKeys(queue: string): Promise<number> {
    const { keys } = await this.send<{ keys: { key: string }[] }>(
      'GET',
      `/queues/${encodeURIComponent(queue)}/keys/parked`,
    );
    for (const { key } of keys) {
      await this.send('POST', `/queues/${encodeURIComponent(queue)}/keys/${encodeURIComponent(key)}/skip`, {
        reason: 'chaos run: drain',
      }).catch((err: unknown) => {
        // Released meanwhile (by the sweep or an earlier pass): nothing left to do.
        if ((err as { status?: number }).status !== 404) throw err;
      });
    }
    return keys.length;
  }

  /**
   * What a queue (or one of its Lambda consumers) still holds: messages waiting, in flight,
   * waiting for a retry, and held behind their key. All zero once every message ended acked or dead.
   */
  async holding(
    queue: string,
    consumer?: string,
  ): Promise<{ ready: number; inFlight: number; delayed: number; held: number }> {
    const query = consumer ? `?consumer=${encodeURIComponent(consumer)}` : '';
    const stats = await this.send<{
      depth?: number;
      ready?: number;
      in_flight: number;
      delayed: number;
      held?: number;
    }>('GET', `/queues/${encodeURIComponent(queue)}/stats${query}`);
    return {
      ready: stats.depth ?? stats.ready ?? 0,
      inFlight: stats.in_flight,
      delayed: stats.delayed,
      held: stats.held ?? 0,
    };
  }

  /**
   * The message's state from its trace (`acked`, `dead`, `leased`...), or `unknown to the server`.
   */
  async state(queue: string, id: string): Promise<string> {
    return (await this.trace(queue, id)).state;
  }

  /** The state of its entry the trace found, which life that is, and the jobs that moved it. */
  async trace(
    queue: string,
    id: string,
  ): Promise<{
    state: string;
    replayId?: string;
    events: { event: string; detail: Record<string, unknown> }[];
  }> {
    try {
      const trace = await patiently(() => this.client.trace(queue, id));
      return { state: trace.state, replayId: trace.replay_id, events: trace.events };
    } catch (err) {
      if (err instanceof MessageNotFoundError) return { state: 'unknown to the server', events: [] };
      throw err;
    }
  }

  /** Starts the run's redrive of the queue's DLQ, everything dead until now (`start`). */
  startRedrive(queue: string, ratePerSec: number): Promise<Redrive> {
    return this.start(queue, 'redrive', { rate_per_sec: ratePerSec }, (id) =>
      this.client.getRedrive(queue, id),
    );
  }

  /** Starts the run's replay of these messages of the queue, accepted since `from` (`start`). */
  startReplay(queue: string, from: number, ids: readonly string[], ratePerSec: number): Promise<Replay> {
    const body = {
      from: new Date(from).toISOString(),
      rate_per_sec: ratePerSec,
      filter: { message_ids: ids },
    };
    return this.start(queue, 'replay', body, (id) => this.client.getReplay(queue, id));
  }

  redrive(queue: string, id: string): Promise<Redrive> {
    return patiently(() => this.client.getRedrive(queue, id));
  }

  replay(queue: string, id: string): Promise<Replay> {
    return patiently(() => this.client.getReplay(queue, id));
  }

  /**
   * A start is not idempotent: one whose answer was lost is looked for in the queue's audit trail
   * (the run starts one job of a kind per queue) before it is sent again, so a fault or a kill
   * does not start a second job. The entry is written before the job: one whose job is not there
   * (404) is a start that failed after it, and is sent again.
   */
  private async start<V>(
    queue: string,
    kind: 'redrive' | 'replay',
    body: object,
    get: (id: string) => Promise<V>,
  ): Promise<V> {
    const deadline = Date.now() + PATIENCE.forMs;
    for (let refused = 0; ; ) {
      try {
        return await this.transport.send<V>('POST', `/queues/${encodeURIComponent(queue)}/${kind}`, { body });
      } catch (err) {
        if (isRetryable(err) ? Date.now() > deadline : ++refused >= START_ATTEMPTS) throw err;
        await sleep(PATIENCE.everyMs);
        const started = (await patiently(() => this.client.audit(queue))).find((e) => e.action === kind);
        if (!started) continue;
        try {
          return await patiently(() => get(started.target));
        } catch (missing) {
          if (!(missing instanceof NotFoundError)) throw missing;
        }
      }
    }
  }

  private send<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    return patiently(() => this.transport.send<T>(method, path, body === undefined ? {} : { body }));
  }
}
