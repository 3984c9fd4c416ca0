import { isNamespace } from '../core/config.js';
import type { WakeRegistrations } from '../store/wake-registrations.js';
import type { ChannelFrame } from '../wire/channel.js';

/**
 * The server's side of the wake channel (docs/wake-channel.md). A receive that answers nothing
 * registers its caller's connection with the queue; the next admission of the queue in any
 * function instance takes the registrations and posts each connection one `admitted` frame.
 * A Worker so waits on a WebSocket, which costs API Gateway's connection minutes, instead of in a
 * long poll, which bills the api function for every second of the wait.
 */

export interface WakeChannelDeps {
  registrations: WakeRegistrations;
  /** Sends a frame to a connection (API Gateway's PostToConnection); false when it is gone. */
  post: (connection: string, data: string) => Promise<boolean>;
  /** A wake that failed: its receiver looks again at its own next look, so it is logged, not thrown. */
  onError?: (err: unknown) => void;
  now?: () => number;
}

export class WakeChannel {
  constructor(private readonly deps: WakeChannelDeps) {}

  /**
   * Called by a receive of `wants` messages that found nothing, before its last look: an admission
   * after it wakes the connection.
   */
  async register(queue: string, connection: string, wants: number): Promise<void> {
    await this.deps.registrations.register(queue, connection, wants, this.deps.now?.() ?? Date.now());
  }

  /** `entries` new entries of `queue` are free: wakes the oldest receivers that ask for them. Never throws. */
  async admitted(queue: string, entries: number): Promise<void> {
    // A Lambda consumer's namespace is delivered by its mapping, never received.
    if (isNamespace(queue)) return;
    const data = JSON.stringify({ type: 'admitted', queue } satisfies ChannelFrame);
    try {
      // A connection that closed covers nothing: what it asked for goes to the next registrations.
      for (let left = entries; left > 0; ) {
        const taken = await this.deps.registrations.take(queue, left);
        if (!taken.length) return;
        const sent = await Promise.all(
          taken.map(({ connection }) =>
            this.deps.post(connection, data).catch((err) => {
              this.deps.onError?.(err);
              return true;
            }),
          ),
        );
        left = taken.reduce((n, { wants }, i) => (sent[i] ? n : n + wants), 0);
      }
    } catch (err) {
      this.deps.onError?.(err);
    }
  }
}
