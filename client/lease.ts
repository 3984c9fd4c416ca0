import type { LeaseqClient } from './client.js';
import { StaleReceiptError } from './errors.js';
import type { ExtendResult, ReceivedMessage } from './types.js';

/**
 * A worker's hold on one delivered message: heartbeats that extend its lease every lease/3
 * while the handler runs, and the abort signal the handler sees. The signal aborts when
 * the lease is lost (an extend answered STALE_RECEIPT), when its known expiry passes
 * without a renewal, or when the worker releases the message at stop.
 */

export interface LeaseOptions {
  client: LeaseqClient;
  queue: string;
  heartbeat: boolean;
  onHeartbeatError: (err: unknown) => void;
}

export class MessageLease {
  private readonly controller = new AbortController();
  /** The receipt is no longer this worker's: neither ack nor nack it. */
  lost = false;
  private seconds: number;
  private stopped = false;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly message: ReceivedMessage<unknown>,
    private readonly options: LeaseOptions,
  ) {
    // The lease the server granted this delivery is the one each heartbeat asks for again.
    this.seconds = Math.max(1, Math.round((Date.parse(message.lease_expires_at) - Date.now()) / 1000));
    this.watchExpiry(message.lease_expires_at);
    this.scheduleHeartbeat();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Extends the lease now; later heartbeats ask for the same `seconds`. */
  async extend(seconds: number): Promise<ExtendResult> {
    if (this.lost) throw this.signal.reason;
    try {
      const result = await this.options.client.extend(this.options.queue, this.message.receipt, seconds);
      this.seconds = seconds;
      this.watchExpiry(result.lease_expires_at);
      this.scheduleHeartbeat();
      return result;
    } catch (err) {
      if (err instanceof StaleReceiptError) this.lose(err);
      throw err;
    }
  }

  /** Gives the message up: the handler's signal aborts and no heartbeat follows. */
  abort(reason: unknown): void {
    this.stop();
    this.controller.abort(reason);
  }

  /** The handler is done: no more heartbeats. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.heartbeatTimer);
    clearTimeout(this.expiryTimer);
  }

  private lose(reason: unknown): void {
    this.lost = true;
    this.abort(reason);
  }

  private scheduleHeartbeat(): void {
    if (!this.options.heartbeat || this.stopped) return;
    clearTimeout(this.heartbeatTimer);
    this.heartbeatTimer = setTimeout(() => void this.beat(), (this.seconds * 1000) / 3);
  }

  private async beat(): Promise<void> {
    try {
      await this.extend(this.seconds);
    } catch (err) {
      this.options.onHeartbeatError(err);
      // A transient failure: the next beat may still get through before the lease ends.
      if (!this.lost) this.scheduleHeartbeat();
    }
  }

  /**
   * Past the lease's expiry the server may give the message to another consumer: tell the
   * handler. The ack is still tried (clocks differ; the server decides).
   */
  private watchExpiry(leaseExpiresAt: string): void {
    if (this.stopped) return;
    clearTimeout(this.expiryTimer);
    const left = Date.parse(leaseExpiresAt) - Date.now();
    this.expiryTimer = setTimeout(
      () => this.controller.abort(new Error('the lease expired before the handler finished')),
      Math.max(0, left),
    );
  }
}
