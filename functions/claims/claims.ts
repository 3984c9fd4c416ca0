import { createHash } from 'node:crypto';
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { ClaimRef } from '../core/envelope.js';

/**
 * Claim-check: payloads above a queue's threshold live in S3 and the record carries a
 * reference. The object key includes the content hash, so a retried produce of the same id
 * can never change what an earlier copy in the log points to.
 */
export class ClaimStore {
  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
  ) {}

  async put(queue: string, messageId: string, body: Buffer): Promise<ClaimRef> {
    const sha256 = createHash('sha256').update(body).digest('hex');
    const key = `claims/${queue}/${messageId}/${sha256}`;
    await this.s3.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: 'application/json' }),
    );
    return { key, bytes: body.byteLength, sha256 };
  }

  /** The payload a consumer sees: inline, or restored from its claim. */
  async payloadOf(body: { payload?: unknown; claim?: ClaimRef }): Promise<unknown> {
    return body.claim ? JSON.parse((await this.get(body.claim)).toString('utf8')) : body.payload;
  }

  async get(ref: ClaimRef): Promise<Buffer> {
    const out = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: ref.key }));
    const body = Buffer.from((await out.Body?.transformToByteArray()) ?? []);
    const sha256 = createHash('sha256').update(body).digest('hex');
    if (sha256 !== ref.sha256) throw new Error(`claim ${ref.key} does not match its hash`);
    return body;
  }
}
