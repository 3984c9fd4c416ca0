import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';

/**
 * S3 as leaseq uses it (claim-checked payloads, segments over 8 KB), with the client loaded on
 * first use: `./s3-client.js` stays out of the Lambda bundles' main file (a quarter of each) and
 * is imported from a file beside it (infra/leaseq-function.ts). `onClient` is called once, with
 * the client, before its first request (the meter and fault injection hook into it).
 */
export class S3Objects {
  private loaded: Promise<{ client: S3Client; module: typeof import('./s3-client.js') }> | undefined;
  private created: S3Client | undefined;

  constructor(
    private readonly config: S3ClientConfig,
    private readonly onClient: (client: S3Client) => void = () => undefined,
  ) {}

  private load() {
    this.loaded ??= import('./s3-client.js').then((module) => {
      const client = new module.S3Client(this.config);
      this.onClient(client);
      this.created = client;
      return { client, module };
    });
    return this.loaded;
  }

  /** The client itself, for what only the local runtime and tests do (buckets, listings). */
  async client(): Promise<S3Client> {
    return (await this.load()).client;
  }

  async put(bucket: string, key: string, body: string | Uint8Array, contentType: string): Promise<void> {
    const { client, module } = await this.load();
    await module.putObject(client, { bucket, key, body, contentType });
  }

  /** The object's bytes; undefined when there is no such key. */
  async get(bucket: string, key: string): Promise<Buffer | undefined> {
    const { client, module } = await this.load();
    return module.getObject(client, { bucket, key });
  }

  destroy(): void {
    this.created?.destroy();
  }
}
