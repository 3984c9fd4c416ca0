import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateBucketCommand,
  GetObjectCommand,
  HeadBucketCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, describe, expect, it } from 'vitest';
import { createClients } from '../../functions/aws/clients.js';
import { removeTornS3Puts } from '../../infra/local/s3-repair.js';

/** A folder s3rver left mid-put by a killed process opens again once the start mends it. */

const require = createRequire(import.meta.url);
const S3rver = require('s3rver') as new (
  opts: Record<string, unknown>,
) => { run(): Promise<AddressInfo>; close(): Promise<void> };

const BUCKET = 'torn';
const dir = mkdtempSync(join(tmpdir(), 'leaseq-s3-repair-'));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** s3rver on `dir` for the length of `use`, with the runtime's S3 client settings. */
async function withS3<T>(use: (s3: S3Client) => Promise<T>): Promise<T> {
  const server = new S3rver({ address: '127.0.0.1', port: 0, directory: dir, silent: true });
  const endpoint = `http://127.0.0.1:${(await server.run()).port}`;
  const clients = createClients({
    region: 'us-east-1',
    endpoints: { dynamodb: endpoint, kinesis: endpoint, s3: endpoint },
    maxAttempts: 1,
  });
  try {
    return await use(await clients.s3.client());
  } finally {
    clients.destroy();
    await server.close();
  }
}

const headBucket = (s3: S3Client) =>
  s3.send(new HeadBucketCommand({ Bucket: BUCKET })).then(
    () => 'ok',
    (err: { $metadata?: { httpStatusCode?: number } }) => `failed ${err.$metadata?.httpStatusCode}`,
  );

describe('removeTornS3Puts', () => {
  it('removes what killed puts left, keeps whole objects, and the bucket answers again', async () => {
    await withS3(async (s3) => {
      await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
      for (const key of ['seg/whole.json', 'seg/truncated.json', 'seg/unanswered.json'])
        await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: `{"key":"${key}"}` }));
    });
    const folder = join(dir, BUCKET, 'seg');
    // Killed while writing the metadata file, and before writing it.
    writeFileSync(join(folder, 'truncated.json._S3rver_metadata.json'), '');
    rmSync(join(folder, 'unanswered.json._S3rver_metadata.json'));
    expect(await withS3(headBucket)).toBe('failed 500');

    const removed = removeTornS3Puts(dir);
    expect(removed.map((p) => p.slice(folder.length + 1)).sort()).toEqual([
      'truncated.json',
      'unanswered.json',
    ]);
    expect(readdirSync(folder).sort()).toEqual([
      'whole.json._S3rver_metadata.json',
      'whole.json._S3rver_object',
      'whole.json._S3rver_object.md5',
    ]);
    await withS3(async (s3) => {
      expect(await headBucket(s3)).toBe('ok');
      const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'seg/whole.json' }));
      expect(await got.Body?.transformToString()).toBe('{"key":"seg/whole.json"}');
    });
    expect(removeTornS3Puts(dir)).toEqual([]);
    expect(removeTornS3Puts(join(dir, 'no-such-folder'))).toEqual([]);
  });
});
