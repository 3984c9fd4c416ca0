import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import type { KinesisStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PutRecordsCommand } from '../../functions/aws/kinesis.js';
import { sleep } from '../../functions/core/async.js';
import { consumerNamespace, ownStreamName, type QueueConfig } from '../../functions/core/config.js';
import { type Envelope, encodeEnvelope } from '../../functions/core/envelope.js';
import { bindConsumer, leaseqConsumer } from '../../functions/lambda-consumer/middleware.js';
import { metricsOptions, SERVICE } from '../../functions/observability/metrics.js';
import { buildServices } from '../../functions/services.js';
import { lambdaContext } from '../../infra/local/lambda-context.js';
import { calls, handler, holds } from '../fixtures/lambda-consumer.js';
import { CapturedMetrics } from '../helpers/captured-metrics.js';
import { madeUpRecord } from '../helpers/kinesis-event.js';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { until } from '../helpers/until.js';

/**
 * A Lambda consumer (test/fixtures/lambda-consumer.ts) on the queue `events`, run by the local
 * runtime's event source mapping as Lambda runs it on AWS: the consumer contract of docs/contract.md, "Guarantees".
 */

let t: TestRuntime;
const NS = consumerNamespace('events', 'billing');

/** The tenant file as written: what the stack hands a consumer in its environment. */
const TENANT_FILE = {
  tenant: 'push',
  queues: {
    events: {
      shards: 1,
      backoff_seconds: [0],
      max_attempts: 3,
      claim_check_bytes: 1024,
      consumers: [{ name: 'billing', entry: 'test/fixtures/lambda-consumer.ts' }],
    },
  },
};

beforeAll(async () => {
  t = await startTestRuntime(TENANT_FILE);
});
afterAll(async () => {
  await t?.close();
});

const services = () => buildServices(t.runtime.config, t.runtime.clients);
const eventsConfig = () => t.runtime.config.tenant.queues.events as QueueConfig;
const callsOf = (id: string) => calls.filter((c) => c.message_id === id);

/** What trace says of a message in the consumer's namespace; undefined before it was admitted. */
const stateOf = async (id: string) =>
  (
    await services()
      .trace.trace(NS, id)
      .catch(() => undefined)
  )?.state;

function envelopeOf(id: string, payload: unknown = {}): Envelope {
  const now = new Date().toISOString();
  return {
    v: 1,
    message_id: id,
    queue: 'events',
    produced_at: now,
    enqueued_at: now,
    attempt: 1,
    entry: 1,
    payload,
  };
}

/**
 * Sequence numbers for records made up by a test: just past the stream's last real record, so they
 * are new to the lease layer (whose admission goes by sequence number) and older than the next real
 * record (the emulator's record counter is in higher digits than what is added here).
 */
async function sequences(count: number): Promise<string[]> {
  // No retry of an earlier test may land in the log after these (it would pass them over).
  await until(async () => (await services().stats.consumer(NS)).delayed === 0);
  await t.runtime.eventSource.drained(10_000);
  const real = BigInt((await t.records('events')).at(-1)?.sequenceNumber ?? '0');
  const from = real > lastMadeUp ? real : lastMadeUp;
  lastMadeUp = from + BigInt(count);
  return Array.from({ length: count }, (_, i) => (from + BigInt(i + 1)).toString());
}
let lastMadeUp = 0n;

/** A record as the event source hands it over, for invoking a bound consumer directly. */
const recordOf = (envelope: Envelope, sequenceNumber: string) =>
  madeUpRecord(envelope, 'shardId-000000000000', sequenceNumber, ownStreamName('push', 'events'));

const bound = () =>
  bindConsumer(handler, {
    config: t.runtime.config,
    clients: t.runtime.clients,
    queue: 'events',
    consumer: 'billing',
    logger: new Logger({ logLevel: 'SILENT' }),
  });

describe('a Lambda consumer on an unordered queue', () => {
  it('dead-letters a poison message after its attempts while the 199 others are handled once', async () => {
    const ids = Array.from({ length: 200 }, (_, i) => `a-${String(i).padStart(3, '0')}`);
    const poison = 'a-117';
    await queueApi(t, 'events').produce(
      ids.map((id) => ({ message_id: id, payload: { poison: id === poison } })),
    );
    await until(async () => (await stateOf(poison)) === 'dead');
    await t.runtime.eventSource.drained(15_000);

    for (const id of ids.filter((id) => id !== poison)) {
      expect(
        callsOf(id).map((c) => c.attempt),
        id,
      ).toEqual([1]);
    }
    expect(callsOf(poison).map((c) => c.attempt)).toEqual([1, 2, 3]);
    const dead = await services().deadLetters.get(NS, eventsConfig(), poison);
    expect(dead.attempts.map((a) => [a.attempt, a.reason, a.error])).toEqual([
      [1, 'nack', `poison ${poison}`],
      [2, 'nack', `poison ${poison}`],
      [3, 'nack', `poison ${poison}`],
    ]);
    expect(dead.attempts[0]?.consumer_id).toMatch(/^billing\//);
    expect(await stateOf('a-000')).toBe('acked');
    // Dispatch does not admit a queue with Lambda consumers: its own namespace stays empty.
    const [shard] = await services().shards.shards(ownStreamName('push', 'events'));
    expect(await services().ranges.head('events', shard as string)).toBeUndefined();
    expect(await services().ranges.head(NS, shard as string)).toBeDefined();

    // The retries went back into the stream for this consumer, and the checkpoint is past them all.
    const records = await t.records('events');
    expect(
      records.filter((r) => r.envelope.message_id === poison).map((r) => [r.envelope.entry, r.envelope.for]),
    ).toEqual([
      [1, undefined],
      [2, 'billing'],
      [3, 'billing'],
    ]);
    const checkpoint = JSON.parse(
      readFileSync(join(t.dataDir, 'checkpoints', 'consumer-events-billing.json'), 'utf8'),
    );
    const last = records.at(-1);
    expect(checkpoint.shards[last?.shardId as string]).toBe(last?.sequenceNumber);
  });

  it('leases and acks a batch with a write per range, not per message', async () => {
    await t.runtime.eventSource.drained(10_000);
    const before = calls.length;
    t.runtime.clients.meter.reset();
    await queueApi(t, 'events').produce(
      Array.from({ length: 100 }, (_, i) => ({ payload: { i, pad: 'x'.repeat(900) } })),
    );
    await until(() => calls.length >= before + 100);
    await t.runtime.eventSource.drained(10_000);
    const units = t.runtime.clients.meter.snapshot();
    // A segment, and per range of 20 its creation, a lease and an ack: the per-message layout
    // wrote an item per message at admission, lease and ack (about 8 units each, with its index).
    expect(units.writeUnits / 100).toBeLessThan(1);
    expect(units.indexWriteUnits).toBe(0);
    expect(calls.length).toBe(before + 100);
  });

  it('does not handle a redelivered message twice once it is completed', async () => {
    await queueApi(t, 'events').produce([{ message_id: 'b-1', payload: { n: 1 } }]);
    await until(async () => (await stateOf('b-1')) === 'acked');
    const [copy] = (await t.records('events')).filter((r) => r.envelope.message_id === 'b-1');
    await t.runtime.clients.kinesis.send(
      new PutRecordsCommand({
        StreamName: ownStreamName('push', 'events'),
        Records: [{ PartitionKey: 'b-1', Data: encodeEnvelope(copy?.envelope as Envelope) }],
      }),
    );
    await t.runtime.eventSource.drained(10_000);
    expect((await t.records('events')).filter((r) => r.envelope.message_id === 'b-1')).toHaveLength(2);
    expect(callsOf('b-1')).toHaveLength(1);
  });

  it('dead-letters a NonRetryableError at once', async () => {
    await queueApi(t, 'events').produce([{ message_id: 'c-1', payload: { fatal: true } }]);
    await until(async () => (await stateOf('c-1')) === 'dead');
    const dead = await services().deadLetters.get(NS, eventsConfig(), 'c-1');
    expect(dead.attempts.map((a) => [a.attempt, a.reason, a.error])).toEqual([
      [1, 'non_retryable', 'cannot handle this one'],
    ]);
    expect(callsOf('c-1')).toHaveLength(1);
  });

  it('delivers a produce-delayed message when it is due, and restores a claim-checked payload', async () => {
    const big = 'x'.repeat(4096);
    const produced = Date.now();
    await queueApi(t, 'events').produce([
      { message_id: 'g-1', payload: { n: 1 }, delay_seconds: 1 },
      { message_id: 'g-2', payload: { big } },
    ]);
    await until(() => callsOf('g-1').length > 0 && callsOf('g-2').length > 0);
    expect(Date.now()).toBeGreaterThanOrEqual(produced + 1000);
    expect(callsOf('g-1').map((c) => [c.attempt, c.payload])).toEqual([[1, { n: 1 }]]);
    expect(callsOf('g-2').map((c) => c.payload)).toEqual([{ big }]);
  });

  it('takes over a lease a crashed invocation left, and handles two copies in one batch once', async () => {
    const envelope = envelopeOf('e-1');
    const [s1, s2] = await sequences(2);
    const event: KinesisStreamEvent = {
      Records: [recordOf(envelope, s1 as string), recordOf(envelope, s2 as string)],
    };
    let release = () => {};
    holds.set('e-1', new Promise<void>((resolve) => (release = resolve)));
    // The first invocation hangs in the handler: to the event source it crashed.
    const crashed = bound()(event, lambdaContext('consumer-events-billing', 60_000));
    await until(() => callsOf('e-1').length === 1);
    holds.delete('e-1');
    // The retry takes the crashed invocation's lease over and delivers the message again at once.
    const retried = await bound()(event, lambdaContext('consumer-events-billing', 60_000));
    expect(retried.batchItemFailures).toEqual([]);
    expect(callsOf('e-1').map((c) => c.attempt)).toEqual([1, 1]);
    expect(await stateOf('e-1')).toBe('acked');
    // The crashed invocation's late ack changes nothing.
    release();
    expect((await crashed).batchItemFailures).toEqual([]);
    const trace = await services().trace.trace(NS, 'e-1');
    expect(trace.state).toBe('acked');
    expect(trace.attempts).toEqual([]);
    expect(callsOf('e-1')).toHaveLength(2);
  });

  it('counts a failed attempt for a message whose invocations keep crashing, so it cannot stall its shard', async () => {
    const [seq] = (await sequences(1)) as [string];
    const event: KinesisStreamEvent = { Records: [recordOf(envelopeOf('k-1'), seq)] };
    let release = () => {};
    holds.set('k-1', new Promise<void>((resolve) => (release = resolve)));
    const hung: Promise<unknown>[] = [];
    // Three invocations die with it in the handler: each retry takes the lease over (the same attempt).
    for (let i = 1; i <= 3; i++) {
      hung.push(bound()(event, lambdaContext('consumer-events-billing', 60_000)));
      await until(() => callsOf('k-1').length === i);
    }
    // The fourth does not hand it over again: that is a failed attempt, and the retry tier takes it.
    const fourth = await bound()(event, lambdaContext('consumer-events-billing', 60_000));
    expect(fourth.batchItemFailures).toEqual([]);
    expect(callsOf('k-1')).toHaveLength(3);
    holds.delete('k-1');
    release();
    await Promise.all(hung);
    await until(async () => (await stateOf('k-1')) === 'acked');
    expect(callsOf('k-1').map((c) => c.attempt)).toEqual([1, 1, 1, 2]);
    const trace = await services().trace.trace(NS, 'k-1');
    expect(trace.attempts.map((a) => [a.attempt, a.reason])).toEqual([[1, 'lease_expired']]);
  });

  it('leaves a handled message whose ack failed to the retry of its batch, not leased for good', async () => {
    let release = () => {};
    holds.set('q-1', new Promise<void>((resolve) => (release = resolve)));
    await queueApi(t, 'events').produce([{ message_id: 'q-1', payload: {} }]);
    await until(() => callsOf('q-1').length === 1);
    // The handler returns into an outage: its ack fails after the SDK's retries.
    t.faults.callFault = {
      match: (op) => op === 'DynamoDB.UpdateItem',
      errorName: 'ThrottlingException',
      throttling: true,
    };
    holds.delete('q-1');
    release();
    try {
      // Longer than the SDK's retries of the ack: 4 attempts, a throttled one backing off up to
      // 1 + 2 + 4 s (a shorter wait let the ack's last retry land on a loaded machine).
      await until(() => t.faults.injected >= 8);
      await sleep(7500);
    } finally {
      t.faults.clear();
    }
    // The event source retries it: taken over, handled again (at least once), and acked.
    await until(async () => (await stateOf('q-1')) === 'acked');
    expect(callsOf('q-1').length).toBeGreaterThanOrEqual(2);
    await until(async () => (await services().stats.consumer(NS)).in_flight === 0, 5000);
  }, 60_000);

  it("counts what each invocation did, under the consumer's namespace", async () => {
    const metrics = new CapturedMetrics(metricsOptions(SERVICE.consumer, 'push'));
    const consumer = bindConsumer(handler, {
      config: t.runtime.config,
      clients: t.runtime.clients,
      queue: 'events',
      consumer: 'billing',
      logger: new Logger({ logLevel: 'SILENT' }),
      metrics,
    });
    const [s1, s2, s3] = (await sequences(3)) as [string, string, string];
    const event: KinesisStreamEvent = {
      Records: [
        recordOf(envelopeOf('m-1'), s1),
        recordOf(envelopeOf('m-2', { fatal: true }), s2),
        recordOf(envelopeOf('m-3', { poison: true }), s3),
      ],
    };
    expect(
      (await consumer(event, lambdaContext('consumer-events-billing', 60_000))).batchItemFailures,
    ).toEqual([]);
    expect(metrics.documents).toHaveLength(1);
    expect(metrics.documents[0]).toMatchObject({
      service: SERVICE.consumer,
      tenant: 'push',
      queue: NS,
      received: 3,
      acked: 1,
      nacked: 2,
      dead_lettered: 1,
    });
    // Each call's run time, returned or thrown, for the handler-duration alarm's p99.
    const seconds = (metrics.documents[0] as unknown as { handler_seconds: number[] }).handler_seconds;
    expect(seconds).toHaveLength(3);
    for (const s of seconds) expect(s).toBeGreaterThanOrEqual(0);
  });

  it('starts no record within the timeout margin and reports them all, without a failed attempt', async () => {
    const [s1, s2] = (await sequences(2)) as [string, string];
    const event: KinesisStreamEvent = {
      Records: [recordOf(envelopeOf('f-1'), s1), recordOf(envelopeOf('f-2'), s2)],
    };
    const out = await bound()(event, lambdaContext('consumer-events-billing', 4000));
    expect(out.batchItemFailures).toEqual([{ itemIdentifier: s1 }, { itemIdentifier: s2 }]);
    expect(callsOf('f-1')).toEqual([]);
    expect(await stateOf('f-1')).toBeUndefined();
  });

  it('builds itself from the environment on AWS (LEASEQ_LOCAL_ENDPOINTS here)', async () => {
    const { config } = t.runtime;
    const env = {
      LEASEQ_TENANT_CONFIG: JSON.stringify(TENANT_FILE),
      LEASEQ_TABLE: config.tableName,
      LEASEQ_BUCKET: config.bucketName,
      AWS_REGION: config.region,
      LEASEQ_LOCAL_ENDPOINTS: JSON.stringify(t.runtime.endpoints),
      LEASEQ_CONSUMER_NAME: 'billing',
    };
    const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
    Object.assign(process.env, env);
    try {
      const seen: string[] = [];
      const lambda = leaseqConsumer(async (m) => void seen.push(m.message_id), { queue: 'events' });
      const out = await lambda(
        { Records: [recordOf(envelopeOf('h-1'), (await sequences(1))[0] as string)] },
        lambdaContext('x', 60_000),
      );
      expect(out.batchItemFailures).toEqual([]);
      expect(seen).toEqual(['h-1']);
      expect(await stateOf('h-1')).toBe('acked');
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  it('refuses a consumer the tenant file does not declare', () => {
    const binding = { config: t.runtime.config, clients: t.runtime.clients };
    const noop = async () => {};
    expect(() =>
      bindConsumer(leaseqConsumer(noop, { queue: 'events' }), {
        ...binding,
        queue: 'events',
        consumer: 'audit',
      }),
    ).toThrow(/consumer "audit" is not declared on queue "events"/);
    expect(() => bindConsumer(noop, { ...binding, queue: 'events', consumer: 'billing' })).toThrow(
      /not a handler made by leaseqConsumer/,
    );
  });

  it('retries the batch through an AWS outage and then handles every message exactly once', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `d-${i}`);
    t.faults.callFault = {
      match: (op) => op === 'DynamoDB.UpdateItem',
      errorName: 'ThrottlingException',
      throttling: true,
    };
    try {
      // Straight into the stream: the API's own writes would meet the fault too.
      await t.runtime.clients.kinesis.send(
        new PutRecordsCommand({
          StreamName: ownStreamName('push', 'events'),
          Records: ids.map((id) => ({ PartitionKey: id, Data: encodeEnvelope(envelopeOf(id)) })),
        }),
      );
      t.runtime.eventSource.nudge();
      await until(() => t.faults.injected >= 8);
      await sleep(1000);
      expect(ids.flatMap(callsOf)).toEqual([]);
    } finally {
      t.faults.clear();
    }
    await t.runtime.eventSource.drained(20_000);
    for (const id of ids) expect(callsOf(id), id).toHaveLength(1);
    for (const id of ids) expect(await stateOf(id), id).toBe('acked');
  });
});
