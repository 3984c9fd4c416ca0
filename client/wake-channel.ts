import type { ChannelFrame } from '../functions/wire/channel.js';
import type { DeliveredMessage } from '../functions/wire/responses.js';

/**
 * The client's end of the wake channel (docs/wake-channel.md): one WebSocket per LeaseqClient,
 * on which a receive that answered nothing is told when its queue admits (the receive named the
 * connection in `wake_connection`), and handed what the admission leased to it. It reconnects
 * when closed (API Gateway ends a connection after 2 hours) and pings an idle one (API Gateway
 * closes it after 10 idle minutes). Node's `ws` is loaded on first use: a client that never waits
 * on the channel never loads it.
 */

export interface WakeChannelOptions {
  url: string;
  apiKey: string;
  /** Keeps an idle connection open; default 5 minutes. */
  pingMs?: number;
  /** First wait before reconnecting, doubling to 30 s; default 500 ms. */
  reconnectMs?: number;
}

interface Waiter {
  queue: string;
  wake: () => void;
}

const MAX_RECONNECT_MS = 30_000;

type Socket = import('ws').WebSocket;

export class WakeChannel {
  private socket: Socket | undefined;
  private id: string | undefined;
  private closed = false;
  private failures = 0;
  private pinger: ReturnType<typeof setInterval> | undefined;
  /** Wakes heard per queue, so one that lands before its waiter is not missed. */
  private readonly heard = new Map<string, number>();
  /** Messages wakes carried, per queue, until `handed` takes them: leased to this client. */
  private readonly inbox = new Map<string, DeliveredMessage[]>();
  private readonly waiters = new Set<Waiter>();
  private opening: Promise<void> | undefined;
  /** From a connection attempt's start to its hello or its close. */
  private connecting = false;
  /** When the next attempt starts, after a close. */
  private reconnectAt = 0;
  /** Callers of `ready` waiting for the hello. */
  private readonly greeted = new Set<() => void>();

  constructor(private readonly options: WakeChannelOptions) {}

  /** The connection's id once it is open and greeted; undefined while (re)connecting. */
  connection(): string | undefined {
    if (!this.opening && !this.closed) this.opening = this.open();
    return this.id;
  }

  /**
   * The connection's id once open and greeted, waiting up to `ms` for a connection being opened
   * or about to be; undefined at once when the next attempt is further away (the caller
   * long-polls meanwhile).
   */
  async ready(ms: number, signal?: AbortSignal): Promise<string | undefined> {
    const id = this.connection();
    if (id !== undefined || this.closed) return id;
    if (!this.connecting && this.reconnectAt - Date.now() > ms) return undefined;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.greeted.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      this.greeted.add(done);
    });
    return this.id;
  }

  /** Taken before a receive; `wait` returns at once if a wake came since. */
  seen(queue: string): number {
    return this.heard.get(queue) ?? 0;
  }

  /**
   * Resolves true when `queue` admits (a wake heard since `since`), false after `ms`, when the
   * connection closes (its registrations died with it) or on `signal`.
   */
  wait(queue: string, since: number, ms: number, signal?: AbortSignal): Promise<boolean> {
    if (this.seen(queue) > since) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (woken: boolean) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', aborted);
        this.waiters.delete(waiter);
        resolve(woken);
      };
      const waiter: Waiter = { queue, wake: () => done(true) };
      const aborted = () => done(false);
      const timer = setTimeout(() => done(false), ms);
      signal?.addEventListener('abort', aborted, { once: true });
      if (signal?.aborted) return done(false);
      this.waiters.add(waiter);
    });
  }

  /** The messages wakes handed for `queue` since the last call: leased, to handle or give back. */
  handed(queue: string): DeliveredMessage[] {
    const messages = this.inbox.get(queue) ?? [];
    this.inbox.delete(queue);
    return messages;
  }

  close(): void {
    this.closed = true;
    clearInterval(this.pinger);
    this.socket?.close();
    this.release(undefined);
  }

  private async open(): Promise<void> {
    this.connecting = true;
    const { WebSocket } = await import('ws');
    if (this.closed) return;
    const socket = new WebSocket(this.options.url, {
      headers: { authorization: `Bearer ${this.options.apiKey}` },
    });
    this.socket = socket;
    socket.on('open', () => socket.send(JSON.stringify({ action: 'hello' })));
    socket.on('message', (data) => this.frame(String(data)));
    socket.on('error', () => {
      // 'close' follows: reconnecting is its job.
    });
    socket.on('close', () => {
      this.connecting = false;
      for (const done of [...this.greeted]) done();
      clearInterval(this.pinger);
      this.id = undefined;
      this.socket = undefined;
      // Its registrations died with it: waiters look again, and register the next connection.
      this.release(undefined);
      if (this.closed) return;
      const delay = Math.min(MAX_RECONNECT_MS, (this.options.reconnectMs ?? 500) * 2 ** this.failures++);
      this.reconnectAt = Date.now() + delay;
      setTimeout(() => {
        this.opening = this.closed ? undefined : this.open();
      }, delay).unref?.();
    });
  }

  private frame(text: string): void {
    let frame: ChannelFrame;
    try {
      frame = JSON.parse(text) as ChannelFrame;
    } catch {
      return;
    }
    if (frame.type === 'hello') {
      this.id = frame.connection_id;
      this.connecting = false;
      this.failures = 0;
      clearInterval(this.pinger);
      this.pinger = setInterval(
        () => this.socket?.send(JSON.stringify({ action: 'ping' })),
        this.options.pingMs ?? 5 * 60_000,
      );
      this.pinger.unref?.();
      for (const done of [...this.greeted]) done();
    } else if (frame.type === 'admitted') {
      this.heard.set(frame.queue, this.seen(frame.queue) + 1);
      if (frame.messages?.length)
        this.inbox.set(frame.queue, [...(this.inbox.get(frame.queue) ?? []), ...frame.messages]);
      this.release(frame.queue);
    }
  }

  /** Wakes the waiters of `queue`, or all of them. */
  private release(queue: string | undefined): void {
    for (const waiter of [...this.waiters]) if (queue === undefined || waiter.queue === queue) waiter.wake();
  }
}
