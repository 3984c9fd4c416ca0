import { isNamespace, type QueueConfig } from '../core/config.js';
import { type Range, shareEntries } from '../core/ranges.js';
import type { Counters } from '../store/counters.js';
import type { QueueControls } from '../store/queue-controls.js';
import type { Registration, WaitingReceive, WakeRegistrations } from '../store/wake-registrations.js';
import type { ChannelFrame } from '../wire/channel.js';
import type { DeliveredMessage } from '../wire/responses.js';
import type { RangeReceiver } from './range-receiver.js';

/**
 * The server's side of the wake channel (docs/wake-channel.md). A receive that answers nothing
 * registers its caller's connection with the queue; the next admission of the queue in any
 * function instance takes the registrations, leases each its share of the new ranges as its
 * receive would have, and posts each connection one `admitted` frame carrying its messages. A
 * Worker so waits on a WebSocket, which costs API Gateway's connection minutes, instead of in a
 * long poll, which bills the api function for every second of the wait; and what it waited for
 * comes without a receive of its own.
 */

export interface WakeChannelDeps {
  registrations: WakeRegistrations;
  /** Sends a frame to a connection (API Gateway's PostToConnection); false when it is gone. */
  post: (connection: string, data: string) => Promise<boolean>;
  /** Leases and answers a share as a receive does; gives back what a gone connection was handed. */
  receiver: Pick<RangeReceiver, 'handShare' | 'giveBack'>;
  /** A paused queue hands nothing, and a purged message is left to the receives that drop it. */
  controls: Pick<QueueControls, 'look'>;
  counters: Pick<Counters, 'addHandling'>;
  /** A wake that failed: its receiver looks again at its own next look, so it is logged, not thrown. */
  onError?: (err: unknown) => void;
}

/**
 * The payload one wake carries, in all: API Gateway takes a frame of 128 KB, which also carries
 * each message's receipt and fields (about 300 bytes) and JSON's escapes. A message past it is
 * left to the woken receiver's receive.
 */
export const HANDED_MAX_BYTES = 48 * 1024;

export class WakeChannel {
  constructor(private readonly deps: WakeChannelDeps) {}

  /**
   * Called by a receive that found nothing, before its last look: an admission after it wakes the
   * connection, and hands it messages when the receive has a lease for them.
   */
  async register(
    queue: string,
    connection: string,
    receive: WaitingReceive,
    now = Date.now(),
  ): Promise<void> {
    await this.deps.registrations.register(queue, connection, receive, now);
  }

  /**
   * `entries` new entries of `queue` are free in `ranges` (none given: an ordered queue, whose
   * receivers look for their keys' runs): wakes the oldest receivers that ask for them, each
   * handed its share. A connection that closed covers nothing: what it asked for goes to the next
   * registrations. Never throws.
   */
  async admitted(
    queue: string,
    config: QueueConfig,
    entries: number,
    ranges: readonly Range[],
  ): Promise<void> {
    // A Lambda consumer's namespace is delivered by its mapping, never received.
    if (isNamespace(queue)) return;
    try {
      let hand = ranges.length > 0;
      for (let left = entries; left > 0; ) {
        const taken = await this.deps.registrations.take(queue, left);
        if (!taken.length) return;
        // Read once someone waits: most admissions find nobody registered.
        const controls = hand ? await this.deps.controls.look(queue) : undefined;
        const shares = controls && !controls.paused ? shareEntries(ranges, taken.map(handedWants)) : [];
        const sent = await Promise.all(
          taken.map((registration, i) =>
            this.wake(queue, config, registration, shares[i] ?? [], controls?.purgedBefore),
          ),
        );
        left = taken.reduce((n, { wants }, i) => (sent[i] ? n : n + wants), 0);
        // What gone connections were handed is free again, for the next ones to look for.
        hand = false;
      }
    } catch (err) {
      this.deps.onError?.(err);
    }
  }

  /** Posts one wake, with the messages of `share` leased to it; false when the connection is gone. */
  private async wake(
    queue: string,
    config: QueueConfig,
    { connection, lease }: Registration,
    share: Parameters<RangeReceiver['handShare']>[2],
    purgedBefore: number | undefined,
  ): Promise<boolean> {
    let messages: DeliveredMessage[] = [];
    try {
      if (lease && share.length)
        messages = await this.unlessPurged(
          queue,
          config,
          await this.deps.receiver.handShare(queue, config, share, lease, HANDED_MAX_BYTES),
          purgedBefore,
        );
    } catch (err) {
      // Nothing handed: the wake alone sends the receiver to look.
      this.deps.onError?.(err);
    }
    let sent: boolean;
    try {
      sent = await this.deps.post(connection, frame(queue, messages));
    } catch (err) {
      this.deps.onError?.(err);
      // A bare wake that failed is the receiver's to make up at its next look; handed messages are given back.
      sent = !messages.length;
    }
    if (sent && messages.length) await this.deps.counters.addHandling(queue, { delivered: messages.length });
    // Leased to a connection that will not take them: back at once, no attempt used.
    if (!sent && messages.length) await this.deps.receiver.giveBack(queue, config, messages);
    return sent;
  }

  /** A purge mark's messages are given back for the receives that drop them. */
  private async unlessPurged(
    queue: string,
    config: QueueConfig,
    messages: DeliveredMessage[],
    purgedBefore: number | undefined,
  ): Promise<DeliveredMessage[]> {
    if (purgedBefore === undefined || !messages.length) return messages;
    const purged = messages.filter((m) => Date.parse(m.enqueued_at) < purgedBefore);
    if (purged.length) await this.deps.receiver.giveBack(queue, config, purged);
    return messages.filter((m) => !purged.includes(m));
  }
}

/** What a registration's receive is handed at most: none without a lease to write. */
function handedWants({ wants, lease }: Registration): number {
  return lease ? wants : 0;
}

function frame(queue: string, messages: DeliveredMessage[]): string {
  return JSON.stringify({
    type: 'admitted',
    queue,
    ...(messages.length ? { messages } : {}),
  } satisfies ChannelFrame);
}
