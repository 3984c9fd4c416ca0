import { LeaseqClient, MessageNotFoundError } from '../client/index.js';
import { withRetries } from '../client/retry.js';
import { Transport } from '../client/transport.js';

/**
 * The operator's calls a chaos run needs at its end: the whole DLQ, releasing parked keys, where
 * a message is, and what a queue still holds. They retry what may pass later (the client's policy), since a run's
 * verdict must not hang on one lost answer.
 */

const RETRIES = { maxRetries: 8, baseMs: 200 };

export class AdminApi {
  private readonly client: LeaseqClient;
  private readonly transport: Transport;

  constructor(baseUrl: string, adminKey: string) {
    this.client = new LeaseqClient({
      baseUrl,
      apiKey: adminKey,
      maxRetries: RETRIES.maxRetries,
      retryBaseMs: RETRIES.baseMs,
    });
    this.transport = new Transport({ baseUrl, apiKey: adminKey, fetch: globalThis.fetch, timeoutMs: 10_000 });
  }

  /** Every dead letter of the queue, all pages: message id → when it died. */
  async deadLetters(queue: string): Promise<Map<string, number>> {
    const dead = new Map<string, number>();
    let cursor: string | undefined;
    do {
      const page = await this.client.dlq(queue, { limit: 100, ...(cursor ? { cursor } : {}) });
      for (const m of page.messages) dead.set(m.message_id, Date.parse(m.dead_at));
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

  /** The message's state from its trace (`acked`, `dead`, `leased`...), or `unknown to the server`. */
  async state(queue: string, id: string): Promise<string> {
    try {
      const trace = await this.send<{ state: string }>(
        'GET',
        `/queues/${encodeURIComponent(queue)}/messages/${encodeURIComponent(id)}`,
      );
      return trace.state;
    } catch (err) {
      if (err instanceof MessageNotFoundError) return 'unknown to the server';
      throw err;
    }
  }

  private send<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    return withRetries(RETRIES, undefined, () =>
      this.transport.send<T>(method, path, body === undefined ? {} : { body }),
    );
  }
}
