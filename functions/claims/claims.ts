import { createHash } from 'node:crypto';
import type { S3Objects } from '../aws/s3-objects.js';
import type { ClaimRef } from '../core/envelope.js';

/**
 * Claim-check: payloads above a queue's threshold live in S3 and the record carries a
 * reference. The object key includes the content hash, so a retried produce of the same id
 * can never change what an earlier copy in the log points to.
 */
export class ClaimStore {
  constructor(
    private readonly s3: S3Objects,
    private readonly bucket: string,
  ) {}

  async put(queue: string, messageId: string, body: Buffer): Promise<ClaimRef> {
    const sha256 = createHash('sha256').update(body).digest('hex');
    const key = `claims/${queue}/${messageId}/${sha256}`;
    await this.s3.put(this.bucket, key, body, 'application/json');
    return { key, bytes: body.byteLength, sha256 };
  }

  /** The payload a consumer sees: inline, or restored from its claim. */
  async payloadOf(body: { payload?: unknown; claim?: ClaimRef }): Promise<unknown> {
    return body.claim ? JSON.parse((await this.get(body.claim)).toString('utf8')) : body.payload;
  }

  async get(ref: ClaimRef): Promise<Buffer> {
    const body = await this.s3.get(this.bucket, ref.key);
    if (!body) throw new Error(`claim ${ref.key} is gone`);
    const sha256 = createHash('sha256').update(body).digest('hex');
    if (sha256 !== ref.sha256) throw new Error(`claim ${ref.key} does not match its hash`);
    return body;
  }
}
