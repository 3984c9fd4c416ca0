import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';

export { S3Client } from '@aws-sdk/client-s3';

/**
 * The S3 client and the two calls leaseq makes with it. Loaded on first use (aws/s3-objects.ts):
 * the Lambda bundles keep it in a file of its own (infra/leaseq-function.ts), so a function
 * instance that never puts or gets an object does not parse the client at init.
 */

export async function putObject(
  client: S3Client,
  input: { bucket: string; key: string; body: string | Uint8Array; contentType: string },
): Promise<void> {
  await client.send(
    new PutObjectCommand({
      Bucket: input.bucket,
      Key: input.key,
      Body: input.body,
      ContentType: input.contentType,
    }),
  );
}

/** The object's bytes (a view of what the SDK read, not a copy); undefined when there is no such key. */
export async function getObject(
  client: S3Client,
  input: { bucket: string; key: string },
): Promise<Buffer | undefined> {
  try {
    const out = await client.send(new GetObjectCommand({ Bucket: input.bucket, Key: input.key }));
    const bytes = (await out.Body?.transformToByteArray()) ?? new Uint8Array();
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  } catch (err) {
    if ((err as Error).name === 'NoSuchKey') return undefined;
    throw err;
  }
}
