import { createHmac, timingSafeEqual } from 'node:crypto';
import * as z from 'zod/mini';
import { intIn } from './zod-mini.js';

/**
 * Receipts: opaque, bound to one delivery (one lease generation) and signed, so a client
 * can neither forge one nor alter one into another delivery's.
 * Format: base64url(JSON claims) "." base64url(HMAC-SHA256(secret, claims)[0..16]).
 */

const claimsSchema = z.object({
  /** queue */
  q: z.string(),
  /** message id */
  m: z.string(),
  /** shard of the delivery */
  s: z.string(),
  /** lease generation */
  g: intIn(1),
  /** delivered at (ms): the max total lease is measured from here */
  d: z.number().check(z.int()),
  /** lease layer: the range (sequence number of its first entry) and the entry's index in it */
  r: z.optional(z.string()),
  i: z.optional(intIn(0)),
  /** lease layer: the payload's bytes, which the ack frees from the storage quota */
  b: z.optional(intIn(0)),
  /** delivered from its key's hold area (an ordered pull queue): the key holds the lease */
  h: z.optional(z.literal(1)),
  /** an ordered queue's message that holds its key (a retry or redriven dead letter back through the log): its ack frees the key */
  k: z.optional(z.literal(1)),
});

export type ReceiptClaims = z.infer<typeof claimsSchema>;

export interface Delivery {
  queue: string;
  messageId: string;
  shard: string;
  generation: number;
  deliveredAt: number;
  /** Deliveries of the lease layer: where the entry is. */
  entry?: { range: string; index: number; bytes: number };
  /** Delivered from its key's hold area: `generation` is the key's lease generation. */
  held?: boolean;
  /** Holds its key (store/key-states.ts `busy_with`): the ack frees the key. */
  holdsKey?: boolean;
}

const MAC_BYTES = 16;

export class ReceiptSigner {
  constructor(private readonly secret: Buffer) {
    if (secret.byteLength < 32) throw new Error('the receipt secret must be at least 32 bytes');
  }

  sign(d: Delivery): string {
    const claims: ReceiptClaims = {
      q: d.queue,
      m: d.messageId,
      s: d.shard,
      g: d.generation,
      d: d.deliveredAt,
      ...(d.entry ? { r: d.entry.range, i: d.entry.index, b: d.entry.bytes } : {}),
      ...(d.held ? { h: 1 as const } : {}),
      ...(d.holdsKey ? { k: 1 as const } : {}),
    };
    const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
    return `${body}.${this.mac(body).toString('base64url')}`;
  }

  /** The delivery a receipt stands for, or undefined when it was not signed here or was altered. */
  verify(receipt: string, queue: string): Delivery | undefined {
    if (typeof receipt !== 'string' || receipt.length > 1024) return undefined;
    const [body, mac, ...rest] = receipt.split('.');
    if (!body || !mac || rest.length) return undefined;
    const given = Buffer.from(mac, 'base64url');
    const expected = this.mac(body);
    if (given.byteLength !== expected.byteLength || !timingSafeEqual(given, expected)) return undefined;
    let claims: ReceiptClaims;
    try {
      claims = claimsSchema.parse(JSON.parse(Buffer.from(body, 'base64url').toString('utf8')));
    } catch {
      return undefined;
    }
    if (claims.q !== queue) return undefined;
    return {
      queue: claims.q,
      messageId: claims.m,
      shard: claims.s,
      generation: claims.g,
      deliveredAt: claims.d,
      ...(claims.r !== undefined && claims.i !== undefined
        ? { entry: { range: claims.r, index: claims.i, bytes: claims.b ?? 0 } }
        : {}),
      ...(claims.h ? { held: true } : {}),
      ...(claims.k ? { holdsKey: true } : {}),
    };
  }

  private mac(body: string): Buffer {
    return createHmac('sha256', this.secret).update(body).digest().subarray(0, MAC_BYTES);
  }
}
