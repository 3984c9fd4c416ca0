import { describe, expect, it } from 'vitest';
import { parseTenantConfig } from '../../functions/core/config.js';
import { SqsError } from '../../functions/sqs/errors.js';
import {
  checkBatch,
  messageIdOf,
  queueOfUrl,
  queueUrl,
  selectAttributes,
  toAttributes,
  toProduceMessage,
} from '../../functions/sqs/mapping.js';
import { md5OfAttributes, md5OfBody } from '../../functions/sqs/md5.js';

const tenant = parseTenantConfig({
  tenant: 't',
  queues: { plain: { shards: 1 }, fifo: { shards: 1, ordered: true } },
});
const config = (q: 'plain' | 'fifo') => tenant.queues[q] as (typeof tenant.queues)[string];

function code(f: () => unknown): string {
  try {
    f();
    return 'ok';
  } catch (err) {
    return err instanceof SqsError ? err.code : String(err);
  }
}

describe('MD5s', () => {
  it("are SQS's: of the body, and of the attributes in its length-prefixed encoding, by name", () => {
    expect(md5OfBody('')).toBe('d41d8cd98f00b204e9800998ecf8427e');
    // The digest a real SQS answered for these two attributes (LocalStack's recorded fixture).
    expect(
      md5OfAttributes({
        Hello: { data_type: 'String', string_value: 'There' },
        General: { data_type: 'String', string_value: 'Kenobi' },
      }),
    ).toBe('fca026605781cb4126a1e9044df24232');
    expect(md5OfAttributes({})).toBeUndefined();
    const binary = md5OfAttributes({ b: { data_type: 'Binary', binary_value: 'AQID' } });
    expect(binary).not.toBe(md5OfAttributes({ b: { data_type: 'String', string_value: 'AQID' } }));
  });
});

describe('queue URLs', () => {
  it('name the tenant and the queue under the endpoint the client called', () => {
    expect(queueUrl('https://api.example.com', 't', 'plain')).toBe('https://api.example.com/t/plain');
    expect(queueOfUrl('https://api.example.com/t/plain', 't')).toBe('plain');
    expect(code(() => queueOfUrl('https://api.example.com/other/plain', 't'))).toBe('QueueDoesNotExist');
    expect(code(() => queueOfUrl('https://api.example.com/plain', 't'))).toBe('InvalidAddress');
    expect(code(() => queueOfUrl('not a url', 't'))).toBe('InvalidAddress');
  });
});

describe('messages', () => {
  it('map the group to the key (required on an ordered queue), and the deduplication id to the id', () => {
    expect(
      toProduceMessage(
        { MessageBody: 'b', MessageGroupId: 'g', MessageDeduplicationId: 'd-1' },
        config('fifo'),
      ),
    ).toEqual({
      payload: 'b',
      delay_seconds: 0,
      key: 'g',
      message_id: 'd-1',
    });
    expect(code(() => toProduceMessage({ MessageBody: 'b' }, config('fifo')))).toBe('MissingParameter');
    expect(code(() => toProduceMessage({ MessageBody: 'bad \u0000 char' }, config('plain')))).toBe(
      'InvalidMessageContents',
    );
    // An id with characters leaseq ids may not hold becomes a stable hash of it.
    expect(messageIdOf('a b!')).toMatch(/^sqs-[0-9a-f]{40}$/);
    expect(messageIdOf('a b!')).toBe(messageIdOf('a b!'));
  });

  it('check attributes as SQS does, and select them by name, prefix or All', () => {
    expect(toAttributes({ n: { DataType: 'Number.int', StringValue: '4' } })).toEqual({
      n: { data_type: 'Number.int', string_value: '4' },
    });
    expect(code(() => toAttributes({ n: { DataType: 'Number', StringValue: 'four' } }))).toBe(
      'InvalidParameterValue',
    );
    expect(code(() => toAttributes({ b: { DataType: 'Binary' } }))).toBe('InvalidParameterValue');
    expect(code(() => toAttributes({ 'aws.x': { DataType: 'String', StringValue: 'v' } }))).toBe(
      'InvalidParameterValue',
    );
    expect(code(() => toAttributes({ l: { DataType: 'String', StringListValues: ['a'] } }))).toBe(
      'UnsupportedOperation',
    );
    const attrs = {
      'order.id': { data_type: 'String', string_value: '1' },
      'order.total': { data_type: 'Number', string_value: '2' },
      kind: { data_type: 'String', string_value: 'k' },
    };
    expect(Object.keys(selectAttributes(attrs, ['order.*']) ?? {})).toEqual(['order.id', 'order.total']);
    expect(Object.keys(selectAttributes(attrs, ['All']) ?? {})).toHaveLength(3);
    expect(selectAttributes(attrs, ['missing'])).toBeUndefined();
    expect(selectAttributes(attrs, undefined)).toBeUndefined();
  });
});

describe('batches', () => {
  it('are refused whole as SQS refuses them: empty, over 10, a bad id, an id twice', () => {
    expect(code(() => checkBatch([]))).toBe('EmptyBatchRequest');
    expect(code(() => checkBatch(Array.from({ length: 11 }, (_, i) => ({ Id: `i${i}` }))))).toBe(
      'TooManyEntriesInBatchRequest',
    );
    expect(code(() => checkBatch([{ Id: 'no spaces' }]))).toBe('InvalidBatchEntryId');
    expect(code(() => checkBatch([{ Id: 'a' }, { Id: 'a' }]))).toBe('BatchEntryIdsNotDistinct');
    expect(code(() => checkBatch([{ Id: 'a' }, { Id: 'b-2_c' }]))).toBe('ok');
  });
});
