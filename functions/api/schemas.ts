import { z } from 'zod';
import { MESSAGE_ID } from '../core/envelope.js';

/** Request bodies of the HTTP API (API.md), validated at the edge. Types come from here. */

export const MAX_BODY_BYTES = 5 * 1024 * 1024;
export const MAX_DELAY_SECONDS = 900;

const headersSchema = z
  .record(z.string().min(1).max(128), z.string().max(1024))
  .refine((h) => Object.keys(h).length <= 32, 'at most 32 headers');

export const produceMessageSchema = z.strictObject({
  message_id: z.string().regex(MESSAGE_ID, 'message_id is 1-128 of [A-Za-z0-9_.:-]').optional(),
  key: z.string().min(1).max(256).optional(),
  payload: z.unknown().refine((v) => v !== undefined, 'payload is required (any JSON value)'),
  headers: headersSchema.optional(),
  delay_seconds: z.number().int().min(0).max(MAX_DELAY_SECONDS).default(0),
});

export const produceRequestSchema = z.strictObject({
  messages: z.array(produceMessageSchema).min(1, 'send 1-500 messages').max(500, 'send 1-500 messages'),
});

export type ProduceMessage = z.infer<typeof produceMessageSchema>;
export type ProduceRequest = z.infer<typeof produceRequestSchema>;

export type ProduceStatus = 'accepted' | 'duplicate' | 'failed';

export interface ProduceResult {
  message_id: string;
  status: ProduceStatus;
  error?: { code: string; message: string; retryable: boolean };
}
