import type { AckResult, AckStatus } from './types.js';

/**
 * Gathers the acks of handlers that finish close together into one request (up to 100
 * receipts, the API's limit): a busy worker sends one ack call per burst, not per message.
 * Each caller still gets its own receipt's status.
 */

const MAX_RECEIPTS = 100;

interface Waiting {
  receipt: string;
  resolve: (status: AckStatus) => void;
  reject: (err: unknown) => void;
}

export class AckBatcher {
  private waiting: Waiting[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly send: (receipts: string[]) => Promise<AckResult[]>,
    /** How long the first ack of a batch waits for others; short, as its lease is running. */
    private readonly lingerMs = 5,
  ) {}

  ack(receipt: string): Promise<AckStatus> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ receipt, resolve, reject });
      if (this.waiting.length >= MAX_RECEIPTS) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.lingerMs);
    });
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.waiting.splice(0, MAX_RECEIPTS);
    if (this.waiting.length) this.timer = setTimeout(() => this.flush(), this.lingerMs);
    if (!batch.length) return;
    this.send(batch.map((w) => w.receipt)).then(
      (results) => {
        for (const [i, w] of batch.entries()) w.resolve(results[i]?.status ?? 'invalid_receipt');
      },
      (err) => {
        for (const w of batch) w.reject(err);
      },
    );
  }
}
