import * as z from 'zod/mini';
import { ERROR_CODES } from '../core/errors.js';
import * as s from '../wire/requests.js';
import * as r from '../wire/responses.js';
import type { Route } from './route.js';

/**
 * The HTTP API as an OpenAPI 3.1 document, its request bodies, query parameters and answers
 * generated from the wire's zod schemas (functions/wire/: what the routes validate with and what
 * the client's types are inferred from; zod's own JSON Schema output, draft 2020-12, which is
 * OpenAPI 3.1's dialect), so the contract cannot drift from the code. Served at
 * `GET /openapi.json` and kept in docs/openapi.json (a test fails when that file is stale).
 */

interface RouteDoc {
  summary: string;
  /** The scope a key needs (`admin:*` for tenant routes, `any` for any key; none for public ones). */
  scope?: 'produce' | 'consume' | 'admin' | 'admin:*' | 'admin:* or queue' | 'any';
  body?: z.ZodMiniType;
  /** A body that may be left out. */
  optionalBody?: boolean;
  query?: z.ZodMiniType;
  /** Takes `?consumer=` (a Lambda consumer's state instead of the queue's). */
  consumer?: boolean;
  /** The status of success and what it answers. */
  ok: [number, string];
  /** The body of that answer (none for 204s and this document itself). */
  answer?: z.ZodMiniType;
}

/** Every route's documentation; a test checks that each route has one. */
export const ROUTE_DOCS: Record<string, RouteDoc> = {
  'GET /health': { summary: 'Liveness', ok: [200, 'Up'], answer: r.healthSchema },
  'GET /openapi.json': { summary: 'This document', ok: [200, 'The OpenAPI 3.1 document'] },
  'GET /queues': {
    summary: 'The queues this key has a scope on, with what it may do on each',
    scope: 'any',
    ok: [200, 'The queues, each with what the key may do there'],
    answer: r.queuesResponseSchema,
  },
  'POST /queues/{queue}/messages': {
    summary: 'Produce 1-500 messages, one result each (accepted, duplicate or failed)',
    scope: 'produce',
    body: s.produceRequestSchema,
    ok: [200, "One result per message, in the request's order"],
    answer: r.produceResponseSchema,
  },
  'POST /queues/{queue}/receive': {
    summary: 'Lease up to 100 messages, long polling up to 20 s',
    scope: 'consume',
    body: s.receiveRequestSchema,
    ok: [200, 'The leased messages (none when the wait ran out)'],
    answer: r.receiveResponseSchema,
  },
  'POST /queues/{queue}/receive/cancel': {
    summary: 'Call off a long poll by its poll_id: what it leases from then on is given back',
    scope: 'consume',
    body: s.cancelReceiveSchema,
    ok: [204, 'Called off'],
  },
  'POST /queues/{queue}/ack': {
    summary: 'Ack 1-100 receipts (idempotent)',
    scope: 'consume',
    body: s.ackRequestSchema,
    ok: [200, 'One result per receipt'],
    answer: r.ackResponseSchema,
  },
  'POST /queues/{queue}/nack': {
    summary:
      'Fail a delivery: retried after its tier, or dead-lettered; release gives it back without an attempt',
    scope: 'consume',
    body: s.nackRequestSchema,
    ok: [200, 'Retried, or dead-lettered'],
    answer: r.nackResultSchema,
  },
  'POST /queues/{queue}/extend': {
    summary: 'Heartbeat: a new lease from now, clamped to the max total lease',
    scope: 'consume',
    body: s.extendRequestSchema,
    ok: [200, 'The new lease'],
    answer: r.extendResultSchema,
  },
  'GET /queues/{queue}/dlq': {
    summary: 'Dead letters with their attempts',
    scope: 'admin',
    query: s.dlqListQuerySchema,
    consumer: true,
    ok: [200, 'A page of dead letters, oldest first'],
    answer: r.dlqPageSchema,
  },
  'GET /queues/{queue}/dlq-errors': {
    summary: 'Dead letters grouped by their last error: count, first and last seen, a sample',
    scope: 'admin',
    consumer: true,
    ok: [200, 'The groups, largest first'],
    answer: r.deadLetterGroupsSchema,
  },
  'GET /queues/{queue}/dlq/{message_id}': {
    summary: 'One dead letter',
    scope: 'admin',
    consumer: true,
    ok: [200, 'The dead letter'],
    answer: r.deadLetterSchema,
  },
  'DELETE /queues/{queue}/dlq/{message_id}': {
    summary: 'Purge one dead letter (audited)',
    scope: 'admin',
    consumer: true,
    ok: [204, 'Purged'],
  },
  'POST /queues/{queue}/redrive': {
    summary: 'Start a rate-limited, filtered redrive of dead letters',
    scope: 'admin',
    body: s.redriveRequestSchema,
    consumer: true,
    ok: [202, 'The redrive, started'],
    answer: r.redriveSchema,
  },
  'POST /queues/{queue}/redrive/matching': {
    summary: 'Count the dead letters a redrive with this filter would take, without starting one',
    scope: 'admin',
    body: s.redriveMatchingRequestSchema,
    consumer: true,
    ok: [200, 'How many dead letters match'],
    answer: r.redriveMatchingSchema,
  },
  'GET /queues/{queue}/redrives/{redrive_id}': {
    summary: "A redrive's progress",
    scope: 'admin',
    consumer: true,
    ok: [200, 'The redrive'],
    answer: r.redriveSchema,
  },
  'DELETE /queues/{queue}/redrives/{redrive_id}': {
    summary: 'Cancel a redrive',
    scope: 'admin',
    consumer: true,
    ok: [200, 'The redrive'],
    answer: r.redriveSchema,
  },
  'POST /queues/{queue}/retention': {
    summary:
      'Keep the dead letters already in the DLQ for a longer retention, from each one’s death (audited)',
    scope: 'admin',
    body: s.retentionRequestSchema,
    consumer: true,
    ok: [202, 'The retention job, started'],
    answer: r.retentionSchema,
  },
  'GET /queues/{queue}/retentions/{retention_id}': {
    summary: "A retention job's progress",
    scope: 'admin',
    consumer: true,
    ok: [200, 'The retention job'],
    answer: r.retentionSchema,
  },
  'DELETE /queues/{queue}/retentions/{retention_id}': {
    summary: 'Cancel a retention job',
    scope: 'admin',
    consumer: true,
    ok: [200, 'The retention job'],
    answer: r.retentionSchema,
  },
  'POST /queues/{queue}/replay': {
    summary: 'Deliver again what the queue accepted in a time window, read back from the log',
    scope: 'admin',
    body: s.replayRequestSchema,
    consumer: true,
    ok: [202, 'The replay, started'],
    answer: r.replaySchema,
  },
  'GET /queues/{queue}/replays/{replay_id}': {
    summary: "A replay's progress",
    scope: 'admin',
    consumer: true,
    ok: [200, 'The replay'],
    answer: r.replaySchema,
  },
  'DELETE /queues/{queue}/replays/{replay_id}': {
    summary: 'Cancel a replay',
    scope: 'admin',
    consumer: true,
    ok: [200, 'The replay'],
    answer: r.replaySchema,
  },
  'GET /queues/{queue}/keys/parked': {
    summary: 'Parked keys (ordered queues)',
    scope: 'admin',
    consumer: true,
    ok: [200, 'The parked keys'],
    answer: r.parkedKeysResponseSchema,
  },
  'POST /queues/{queue}/keys/{key}/skip': {
    summary: 'Release a parked key without its dead message (audited)',
    scope: 'admin',
    body: s.skipRequestSchema,
    consumer: true,
    ok: [200, 'The released key'],
    answer: r.skipResultSchema,
  },
  'POST /queues/{queue}/pause': {
    summary: 'Pause deliveries (produce goes on; audited)',
    scope: 'admin',
    body: s.pauseRequestSchema,
    ok: [200, 'The pause'],
    answer: r.pauseResponseSchema,
  },
  'POST /queues/{queue}/resume': {
    summary: 'Resume deliveries (audited)',
    scope: 'admin',
    body: s.resumeRequestSchema,
    optionalBody: true,
    ok: [200, 'The pause that ended'],
    answer: r.resumeResponseSchema,
  },
  'GET /queues/{queue}/audit': {
    summary: 'Who skipped, purged, redrove, replayed or paused what, when and why',
    scope: 'admin',
    query: s.auditQuerySchema,
    ok: [200, 'The entries, newest first'],
    answer: r.auditResponseSchema,
  },
  'GET /queues/{queue}/messages/{message_id}': {
    summary: 'Trace: where a message is and everything that happened to it',
    scope: 'admin',
    consumer: true,
    ok: [200, 'The trace'],
    answer: r.messageTraceSchema,
  },
  'GET /queues/{queue}/stats': {
    summary: 'Depth, in flight, delayed, DLQ, ages, commit stalls, totals, stored bytes, drain',
    scope: 'admin',
    consumer: true,
    ok: [200, "The queue's stats, or a Lambda consumer's with ?consumer="],
    answer: r.statsResponseSchema,
  },
  'POST /keys': {
    summary: 'Make an API key (shown once), with SQS credentials if asked',
    scope: 'admin:*',
    body: s.createKeySchema,
    ok: [201, 'The key, shown once, with its SQS credentials if asked'],
    answer: r.createdKeySchema,
  },
  'GET /keys': {
    summary: 'List API keys (never the keys)',
    scope: 'admin:*',
    ok: [200, 'The keys (never the keys themselves)'],
    answer: r.keysResponseSchema,
  },
  'GET /usage': {
    summary:
      'Usage over a range (at most 93 days) per queue and in all: produced, consumed, stored GB-hours, requests, cost at list prices',
    scope: 'admin:* or queue',
    query: s.usageQuerySchema,
    ok: [200, 'Each queue’s usage and the total; `accuracy` says which figures are exact'],
    answer: r.usageResponseSchema,
  },
  'GET /alarms': {
    summary: "The queues' alarms above their threshold now, as the sweep last evaluated them",
    scope: 'admin:*',
    ok: [200, 'Each alarm that fired (ALARM) or is waiting out the time it must last (PENDING)'],
    answer: r.alarmsResponseSchema,
  },
  'DELETE /keys/{name}': {
    summary: 'Revoke an API key and its SQS credentials',
    scope: 'admin:*',
    ok: [204, 'Revoked'],
  },
  'POST /keys/{name}/sqs-credentials': {
    summary: "Make (or rotate) a run-time key's SQS credentials; the secret is shown once",
    scope: 'admin:*',
    body: s.createSqsCredentialsSchema,
    optionalBody: true,
    ok: [201, 'The credentials; the secret is shown once'],
    answer: r.sqsCredentialsCreatedSchema,
  },
};

/** The error body, its codes listed: the wire's type keeps `code` a string, so a client keeps working when one is added. */
function errorSchema(): Record<string, unknown> {
  const schema = schemaOf(r.errorBodySchema);
  const error = (schema.properties as Record<string, { properties: Record<string, unknown> }>).error;
  if (error) error.properties.code = { type: 'string', enum: [...ERROR_CODES] };
  return schema;
}

/** The scope line of a route's description. */
function scopeText(scope: NonNullable<RouteDoc['scope']>): string {
  if (scope === 'any') return 'any key';
  if (scope === 'admin:*') return 'admin:*';
  if (scope === 'admin:* or queue') return 'admin:* (or admin:<queue> with ?queue=<queue>)';
  return `${scope}:<queue> (or ${scope}:*)`;
}

/**
 * JSON Schema of a body as its input: what a route reads, defaults optional; and an answer without
 * `additionalProperties: false`, since an answer may gain a field.
 */
function schemaOf(schema: z.ZodMiniType): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
  }) as Record<string, unknown>;
  return rest;
}

export function openApiDocument(routes: readonly Route[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const id = `${route.method} ${route.path}`;
    const doc = ROUTE_DOCS[id];
    if (!doc) throw new Error(`${id} has no entry in ROUTE_DOCS (functions/api/openapi.ts)`);
    const params = [...route.path.matchAll(/\{([a-z_]+)\}/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    const querySchema = doc.query ? schemaOf(doc.query) : {};
    const required = (querySchema.required as string[] | undefined) ?? [];
    const query = Object.entries((querySchema.properties as Record<string, unknown> | undefined) ?? {})
      .filter(([name]) => name !== 'consumer')
      .map(([name, schema]) => ({ name, in: 'query', required: required.includes(name), schema }));
    const consumer = doc.consumer
      ? [
          {
            name: 'consumer',
            in: 'query',
            required: false,
            description: "A Lambda consumer's state instead of the queue's",
            schema: { type: 'string' },
          },
        ]
      : [];
    paths[route.path] ??= {};
    (paths[route.path] as Record<string, unknown>)[route.method.toLowerCase()] = {
      operationId: id.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_|_$/g, ''),
      summary: doc.summary,
      ...(doc.scope ? { description: `Scope: ${scopeText(doc.scope)}` } : {}),
      ...(doc.scope ? { security: [{ apiKey: [] }] } : { security: [] }),
      parameters: [...params, ...query, ...consumer],
      ...(doc.body
        ? {
            requestBody: {
              required: !doc.optionalBody,
              content: { 'application/json': { schema: schemaOf(doc.body) } },
            },
          }
        : {}),
      responses: {
        [String(doc.ok[0])]: {
          description: doc.ok[1],
          ...(doc.answer ? { content: { 'application/json': { schema: schemaOf(doc.answer) } } } : {}),
        },
        '4XX': {
          description: 'Refused',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
        },
        '503': {
          description: 'Busy: retry after Retry-After',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
        },
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'leaseq',
      version: '1',
      description:
        "A durable work queue: produce, pull consumers with leases, dead letters with history, redrive, replay. The SQS-compatible endpoint (POST / with x-amz-target: AmazonSQS.<Action>) speaks SQS's own protocol and is documented in the README.",
    },
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'An API key: Authorization: Bearer <key>' },
      },
      schemas: { Error: errorSchema() },
    },
    paths,
  };
}
