import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerStackEvent, type StackEvent, streamsToRelease } from '../../functions/fan-out-release/app.js';

/** The release function's answers to the stack's busy-time fan-out resource, PUT to a server of the test's own. */

const answers: { method?: string; contentType?: string; body: Record<string, unknown> }[] = [];
const server = createServer((req, res) => {
  let text = '';
  req.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  req.on('end', () => {
    answers.push({ method: req.method, contentType: req.headers['content-type'], body: JSON.parse(text) });
    res.end();
  });
});
let url = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/answer?signed`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const event = (over: Partial<StackEvent>): StackEvent => ({
  RequestType: 'Delete',
  ResponseURL: url,
  StackId: 'arn:aws:cloudformation:us-east-1:123456789012:stack/t/1',
  RequestId: 'r-1',
  LogicalResourceId: 'BusyFanOut',
  PhysicalResourceId: 'BusyFanOut-busy-fan-out',
  ResourceProperties: { Streams: ['leaseq-t_shared', 'leaseq-t-jobs'] },
  ...over,
});

describe('the busy-time fan-out resource', () => {
  it('releases every stream on Delete, those that left when_busy on Update, none on Create', () => {
    expect(streamsToRelease(event({}))).toEqual(['leaseq-t_shared', 'leaseq-t-jobs']);
    expect(
      streamsToRelease(
        event({
          RequestType: 'Update',
          ResourceProperties: { Streams: ['leaseq-t_shared'] },
          OldResourceProperties: { Streams: ['leaseq-t_shared', 'leaseq-t-jobs'] },
        }),
      ),
    ).toEqual(['leaseq-t-jobs']);
    expect(streamsToRelease(event({ RequestType: 'Create' }))).toEqual([]);
  });

  it('answers SUCCESS once every stream is released, FAILED with why when one was not', async () => {
    const released: string[] = [];
    await answerStackEvent(event({}), async (s) => {
      released.push(s);
    });
    expect(released).toEqual(['leaseq-t_shared', 'leaseq-t-jobs']);
    expect(answers.at(-1)).toEqual({
      method: 'PUT',
      contentType: '',
      body: {
        Status: 'SUCCESS',
        PhysicalResourceId: 'BusyFanOut-busy-fan-out',
        StackId: 'arn:aws:cloudformation:us-east-1:123456789012:stack/t/1',
        RequestId: 'r-1',
        LogicalResourceId: 'BusyFanOut',
      },
    });
    await answerStackEvent(event({}), async () => {
      throw new Error('the consumer of leaseq-t_shared is still being deleted');
    });
    expect(answers.at(-1)?.body).toMatchObject({
      Status: 'FAILED',
      Reason: expect.stringContaining('still being deleted'),
    });
  });
});
