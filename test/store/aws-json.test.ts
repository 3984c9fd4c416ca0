import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BatchGetCommand,
  BatchWriteCommand,
  createDocumentClient,
  GetCommand,
  PutCommand,
  paginateQuery,
  UpdateCommand,
} from '../../functions/aws/dynamodb.js';
import {
  createKinesisClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  ListShardsCommand,
  PutRecordsCommand,
} from '../../functions/aws/kinesis.js';
import type { AnyMiddleware } from '../../functions/aws/sdk-client.js';
import { stackOf } from '../../functions/aws/sdk-client.js';
import { ownStreamName } from '../../functions/core/config.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * The lean AWS JSON clients (functions/aws/aws-json.ts, dynamodb.ts, kinesis.ts) against the
 * emulators: values cross the wire as the SDK's document client and Kinesis client carry them,
 * errors come back as the SDK raises them, and retries follow the SDK's standard strategy.
 */

let t: TestRuntime;
const doc = () => t.runtime.clients.doc;
const table = () => t.runtime.config.tableName;

beforeAll(async () => {
  t = await startTestRuntime({ tenant: 'wire', queues: { raw: { shards: 1 } } });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe('DynamoDB with native values', () => {
  it('round-trips every kind of value, bytes and sets included', async () => {
    const item = {
      pk: 'wire#values',
      sk: 'a',
      text: 'héllo',
      count: 42,
      ratio: 0.25,
      yes: true,
      nothing: null,
      bytes: new Uint8Array([0, 1, 2, 250, 255]),
      tags: new Set(['x', 'y']),
      nested: { list: [1, 'two', { deep: new Uint8Array([7]) }] },
    };
    await doc().send(new PutCommand({ TableName: table(), Item: { ...item, dropped: undefined } }));
    const out = await doc().send(new GetCommand({ TableName: table(), Key: { pk: item.pk, sk: 'a' } }));
    expect(out.Item).toEqual(item);
    expect(out.$metadata.httpStatusCode).toBe(200);
  });

  it('reads what an update leaves, through its expression values', async () => {
    const key = { pk: 'wire#update', sk: 'a' };
    const out = await doc().send(
      new UpdateCommand({
        TableName: table(),
        Key: key,
        UpdateExpression: 'SET v = :v ADD n :one',
        ExpressionAttributeValues: { ':v': { at: 1 }, ':one': 1 },
        ReturnValues: 'ALL_NEW',
      }),
    );
    expect(out.Attributes).toEqual({ ...key, v: { at: 1 }, n: 1 });
  });

  it('pages a query from where the last page ended, and batches gets and writes', async () => {
    const pk = 'wire#pages';
    const sks = ['1', '2', '3', '4', '5'];
    await doc().send(
      new BatchWriteCommand({
        RequestItems: { [table()]: sks.map((sk) => ({ PutRequest: { Item: { pk, sk, n: Number(sk) } } })) },
      }),
    );
    const pages = [];
    for await (const page of paginateQuery(doc(), {
      TableName: table(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk },
      Limit: 2,
    }))
      pages.push(page.Items?.map((i) => i.sk));
    expect(pages.flat()).toEqual(sks);
    expect(pages.length).toBeGreaterThanOrEqual(3);
    const got = await doc().send(
      new BatchGetCommand({
        RequestItems: {
          [table()]: {
            Keys: [
              { pk, sk: '2' },
              { pk, sk: '4' },
            ],
          },
        },
      }),
    );
    expect(got.Responses?.[table()]?.map((i) => i.n).sort()).toEqual([2, 4]);
  });

  it("raises the service's error by its name, as the SDK does", async () => {
    const item = { pk: 'wire#conditional', sk: 'a' };
    await doc().send(new PutCommand({ TableName: table(), Item: item }));
    const err = await doc()
      .send(
        new PutCommand({ TableName: table(), Item: item, ConditionExpression: 'attribute_not_exists(pk)' }),
      )
      .catch((e: unknown) => e);
    expect(err).toMatchObject({
      name: 'ConditionalCheckFailedException',
      $fault: 'client',
      $metadata: { httpStatusCode: 400, attempts: 1 },
    });
    expect((err as Error).message).not.toBe('');
  });
});

/** Fails the next `times` attempts of a call (inside the retry loop) the way DynamoDB throttles. */
function throttleAttempts(times: number): AnyMiddleware {
  let left = times;
  return (next) => async (args) => {
    if (left-- <= 0) return next(args);
    throw Object.assign(new Error('slow down'), {
      name: 'ProvisionedThroughputExceededException',
      $fault: 'client',
      $metadata: { httpStatusCode: 400 },
    });
  };
}

/**
 * A client of its own, so the runtime's own calls are not counted: against the runtime's DynamoDB,
 * or another server playing DynamoDB.
 */
function ownClient(maxAttempts: number, endpoint = t.runtime.config.endpoints?.dynamodb) {
  if (!endpoint) throw new Error('the runtime has no local DynamoDB');
  return createDocumentClient({
    region: 'us-east-1',
    endpoint,
    maxAttempts,
    requestHandler: new NodeHttpHandler(),
    credentials: { accessKeyId: 'k', secretAccessKey: 's' },
  });
}

describe("retries, with the SDK's standard strategy", () => {
  it('retries a throttled call until it succeeds, and gives up after maxAttempts', async () => {
    const client = ownClient(3);
    try {
      const get = () =>
        client.send(new GetCommand({ TableName: table(), Key: { pk: 'wire#none', sk: 'a' } }));
      stackOf(client).add(throttleAttempts(2), { step: 'finalizeRequest', name: 'throttle', override: true });
      const out = await get();
      expect(out.Item).toBeUndefined();
      expect(out.$metadata.attempts).toBe(3);
      stackOf(client).add(throttleAttempts(3), { step: 'finalizeRequest', name: 'throttle', override: true });
      await expect(get()).rejects.toMatchObject({
        name: 'ProvisionedThroughputExceededException',
        $metadata: { attempts: 3 },
      });
    } finally {
      client.destroy();
    }
  });

  it("gives up a call sooner when the call asks for fewer attempts than the client's", async () => {
    const endpoint = t.runtime.config.endpoints?.kinesis;
    const client = createKinesisClient({
      region: 'us-east-1',
      endpoint,
      maxAttempts: 3,
      requestHandler: new NodeHttpHandler(),
      credentials: { accessKeyId: 'k', secretAccessKey: 's' },
    });
    try {
      const list = (maxAttempts?: number) =>
        client.send(new ListShardsCommand({ StreamName: ownStreamName('wire', 'raw') }), { maxAttempts });
      stackOf(client).add(throttleAttempts(1), { step: 'finalizeRequest', name: 'throttle', override: true });
      await expect(list(1)).rejects.toMatchObject({
        name: 'ProvisionedThroughputExceededException',
        $metadata: { attempts: 1 },
      });
      stackOf(client).add(throttleAttempts(1), { step: 'finalizeRequest', name: 'throttle', override: true });
      const out = await list();
      expect(out.Shards).toHaveLength(1);
      expect(out.$metadata.attempts).toBe(2);
    } finally {
      client.destroy();
    }
  });

  it('does not retry what a retry cannot change (a failed condition)', async () => {
    const client = ownClient(3);
    let attempts = 0;
    stackOf(client).add(
      (next) => async (args) => {
        attempts++;
        return next(args);
      },
      { step: 'finalizeRequest', name: 'countAttempts' },
    );
    try {
      const item = { pk: 'wire#once', sk: 'a' };
      await client.send(new PutCommand({ TableName: table(), Item: item }));
      await expect(
        client.send(
          new PutCommand({ TableName: table(), Item: item, ConditionExpression: 'attribute_not_exists(pk)' }),
        ),
      ).rejects.toMatchObject({ name: 'ConditionalCheckFailedException', $metadata: { attempts: 1 } });
      expect(attempts).toBe(2);
    } finally {
      client.destroy();
    }
  });

  it("signs with the server's clock after a refusal for a skewed clock, and retries", async () => {
    const SKEW_MS = 3_600_000;
    const server = await playDynamoDb((seen) =>
      seen === 1
        ? [
            400,
            { __type: 'com.amazon.coral.service#InvalidSignatureException', message: 'Signature expired' },
            SKEW_MS,
          ]
        : [200, {}, SKEW_MS],
    );
    const client = ownClient(3, server.endpoint);
    try {
      const out = await client.send(new GetCommand({ TableName: 'any', Key: { pk: 'p', sk: 's' } }));
      expect(out.$metadata.attempts).toBe(2);
      const [first = 0, second = 0] = server.seen.map((h) =>
        Date.parse(
          String(h['x-amz-date']).replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, '$1-$2-$3T$4:$5:$6Z'),
        ),
      );
      expect(second - first).toBeGreaterThan(SKEW_MS - 60_000);
      expect(server.seen[1]?.['x-amz-target']).toBe('DynamoDB_20120810.GetItem');
    } finally {
      client.destroy();
      await server.close();
    }
  });

  it('raises an answer that is not JSON, rather than read it as an empty one (no item)', async () => {
    const server = await playDynamoDb(() => [200, '<html>gateway</html>', 0]);
    const client = ownClient(3, server.endpoint);
    try {
      await expect(
        client.send(new GetCommand({ TableName: 'any', Key: { pk: 'p', sk: 's' } })),
      ).rejects.toMatchObject({
        name: 'DeserializationError',
        $fault: 'server',
        $metadata: { httpStatusCode: 200, attempts: 1 },
      });
    } finally {
      client.destroy();
      await server.close();
    }
  });
});

/**
 * A server playing DynamoDB: `answer(n)` gives the n-th request's status, body (JSON unless a
 * string) and how far ahead of ours its clock (`Date`) is.
 */
async function playDynamoDb(answer: (seen: number) => [number, object | string, number]) {
  const seen: IncomingHttpHeaders[] = [];
  const server: Server = createServer((req, res) => {
    seen.push(req.headers);
    req.resume().on('end', () => {
      const [status, body, aheadMs] = answer(seen.length);
      res.writeHead(status, {
        'content-type': 'application/x-amz-json-1.0',
        date: new Date(Date.now() + aheadMs).toUTCString(),
      });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    seen,
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

describe('Kinesis records', () => {
  it('carry their bytes and arrival time, as the SDK gives them', async () => {
    const stream = ownStreamName('wire', 'raw');
    const kinesis = t.runtime.clients.kinesis;
    const data = new Uint8Array([0, 255, 10, 13, 34]);
    const before = Date.now();
    const put = await kinesis.send(
      new PutRecordsCommand({ StreamName: stream, Records: [{ PartitionKey: 'k', Data: data }] }),
    );
    const landed = put.Records?.[0];
    expect(landed?.SequenceNumber).toBeTruthy();
    const { ShardIterator } = await kinesis.send(
      new GetShardIteratorCommand({
        StreamName: stream,
        ShardId: landed?.ShardId,
        ShardIteratorType: 'AT_SEQUENCE_NUMBER',
        StartingSequenceNumber: landed?.SequenceNumber,
      }),
    );
    const out = await kinesis.send(new GetRecordsCommand({ ShardIterator, Limit: 1 }));
    const record = out.Records?.[0];
    expect(record?.Data).toEqual(data);
    expect(record?.ApproximateArrivalTimestamp).toBeInstanceOf(Date);
    expect(record?.ApproximateArrivalTimestamp?.getTime()).toBeGreaterThanOrEqual(before - 1000);
  });
});
