import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { HttpRequest } from '@smithy/core/transport';
import type { NodeHttpHandler } from '@smithy/node-http-handler';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';
import { MiddlewareStack } from './aws-json.js';
import type { MiddlewareContext } from './sdk-client.js';
import { Sha256 } from './sha256.js';

/**
 * API Gateway's management API for a WebSocket stage: `POST @connections/{id}` sends a frame to one
 * connection (PostToConnection). A signed request of our own for the one call, as aws-json.ts
 * does for DynamoDB and Kinesis: the generated client would add its endpoint rules to every bundle
 * that admits. Not retried: a wake that does not arrive is covered by the receiver's next look.
 */

export interface ConnectionsClientConfig {
  region: string;
  /** The stage's management endpoint: `https://{api}.execute-api.{region}.amazonaws.com/{stage}`. */
  endpoint: string;
  credentials?: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  requestHandler: NodeHttpHandler;
}

export class ConnectionsClient {
  readonly middlewareStack = new MiddlewareStack();
  private readonly url: URL;
  private readonly signer: SignatureV4;

  constructor(private readonly options: ConnectionsClientConfig) {
    this.url = new URL(options.endpoint);
    this.signer = new SignatureV4({
      service: 'execute-api',
      region: options.region,
      credentials: options.credentials ?? defaultProvider(),
      sha256: Sha256,
    });
  }

  /** Sends `data` to the connection: false when it is gone (closed, or never was). */
  async post(connectionId: string, data: string): Promise<boolean> {
    const context: MiddlewareContext = {
      clientName: 'ApiGatewayClient',
      commandName: 'PostToConnectionCommand',
    };
    const call = this.middlewareStack.resolve(
      'initialize',
      this.middlewareStack.resolve('finalizeRequest', () => this.request(connectionId, data), context),
      context,
    );
    return (await call({ input: { ConnectionId: connectionId } })).output.sent as boolean;
  }

  private async request(connectionId: string, data: string) {
    const base = this.url.pathname.replace(/\/$/, '');
    const request = new HttpRequest({
      protocol: this.url.protocol,
      hostname: this.url.hostname,
      ...(this.url.port ? { port: Number(this.url.port) } : {}),
      path: `${base}/@connections/${encodeURIComponent(connectionId)}`,
      method: 'POST',
      headers: { host: this.url.host, 'content-type': 'application/json' },
      body: data,
    });
    const signed = await this.signer.sign(request);
    const { response } = await this.options.requestHandler.handle(signed as HttpRequest);
    // Drained so the connection returns to the pool.
    response.body?.resume?.();
    if (response.statusCode === 410) return { output: { sent: false }, response };
    if (response.statusCode >= 300)
      throw Object.assign(new Error(`PostToConnection answered ${response.statusCode}`), {
        name: response.statusCode === 429 ? 'ThrottlingException' : `Http${response.statusCode}Error`,
        $fault: response.statusCode >= 500 ? 'server' : 'client',
        $metadata: { httpStatusCode: response.statusCode },
      });
    return { output: { sent: true }, response };
  }
}
