import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { HttpRequest } from '@smithy/core/transport';
import { type NodeHttpHandler, streamCollector } from '@smithy/node-http-handler';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider, HttpResponse } from '@smithy/types';
import { MiddlewareStack, parseJson } from './aws-json.js';
import type { MiddlewareContext } from './sdk-client.js';
import { Sha256 } from './sha256.js';

/**
 * The Lambda API's event source mappings (list, create, delete), as signed REST calls of our own.
 * `@aws-sdk/client-lambda` would bring every Lambda operation's schema and its endpoint rules
 * into the bundle that switches fan-out, as the generated DynamoDB and Kinesis clients would
 * (docs/decisions/0019-aws-json-without-generated-clients.md); every bundle stays within 300 KB.
 * Not retried: the caller steps again at its next pass.
 */

export interface EventSourceMappingsClientConfig {
  region: string;
  /** Default the regional endpoint, `https://lambda.{region}.amazonaws.com`. */
  endpoint?: string;
  credentials?: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  requestHandler: NodeHttpHandler;
}

/** A mapping as the API describes it: the members leaseq reads. */
export interface EventSourceMapping {
  UUID: string;
  EventSourceArn?: string;
  FunctionArn?: string;
  /** Creating, Enabling, Enabled, Disabling, Disabled, Updating or Deleting. */
  State?: string;
  StartingPosition?: string;
  BatchSize?: number;
  MaximumBatchingWindowInSeconds?: number;
  ParallelizationFactor?: number;
  FunctionResponseTypes?: string[];
  BisectBatchOnFunctionError?: boolean;
  MaximumRetryAttempts?: number;
  MaximumRecordAgeInSeconds?: number;
}

/** CreateEventSourceMapping's input for a Kinesis source (a stream or one of its consumers). */
export interface CreateEventSourceMappingInput {
  /** The function's name or ARN. */
  FunctionName: string;
  EventSourceArn: string;
  StartingPosition: 'LATEST' | 'TRIM_HORIZON';
  BatchSize?: number;
  MaximumBatchingWindowInSeconds?: number;
  ParallelizationFactor?: number;
  FunctionResponseTypes?: 'ReportBatchItemFailures'[];
  BisectBatchOnFunctionError?: boolean;
  MaximumRetryAttempts?: number;
  MaximumRecordAgeInSeconds?: number;
  Enabled?: boolean;
}

export interface ResponseMetadata {
  httpStatusCode: number;
  requestId?: string;
}

interface Call {
  commandName: string;
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  query?: Record<string, string>;
  body?: object;
}

const API = '/2015-03-31/event-source-mappings/';

export class EventSourceMappingsClient {
  readonly middlewareStack = new MiddlewareStack();
  private readonly url: URL;
  private readonly signer: SignatureV4;

  constructor(private readonly options: EventSourceMappingsClientConfig) {
    const suffix = options.region.startsWith('cn-') ? 'amazonaws.com.cn' : 'amazonaws.com';
    this.url = new URL(options.endpoint ?? `https://lambda.${options.region}.${suffix}`);
    this.signer = new SignatureV4({
      service: 'lambda',
      region: options.region,
      credentials: options.credentials ?? defaultProvider(),
      sha256: Sha256,
    });
  }

  /** The mappings of the function on the source, every page of them. */
  async list(filter: { functionName: string; eventSourceArn: string }): Promise<EventSourceMapping[]> {
    const mappings: EventSourceMapping[] = [];
    let marker: string | undefined;
    do {
      const page = (await this.call({
        commandName: 'ListEventSourceMappingsCommand',
        method: 'GET',
        path: API,
        query: {
          FunctionName: filter.functionName,
          EventSourceArn: filter.eventSourceArn,
          ...(marker ? { Marker: marker } : {}),
        },
      })) as { EventSourceMappings?: EventSourceMapping[]; NextMarker?: string };
      mappings.push(...(page.EventSourceMappings ?? []));
      marker = page.NextMarker || undefined;
    } while (marker);
    return mappings;
  }

  async create(input: CreateEventSourceMappingInput): Promise<EventSourceMapping> {
    return (await this.call({
      commandName: 'CreateEventSourceMappingCommand',
      method: 'POST',
      path: API,
      body: input,
    })) as EventSourceMapping;
  }

  /** Deletes the mapping (Lambda finishes it in the background); one already gone is no error. */
  async delete(uuid: string): Promise<void> {
    try {
      await this.call({
        commandName: 'DeleteEventSourceMappingCommand',
        method: 'DELETE',
        path: `${API}${encodeURIComponent(uuid)}`,
      });
    } catch (err) {
      const error = err as Error & { $metadata?: ResponseMetadata };
      if (error.name !== 'ResourceNotFoundException' || error.$metadata?.httpStatusCode !== 404) throw err;
    }
  }

  /** One request, through the stack's steps as an SDK client's call goes (meter, fault injection). */
  private async call(call: Call): Promise<unknown> {
    const context: MiddlewareContext = { clientName: 'LambdaClient', commandName: call.commandName };
    const send = this.middlewareStack.resolve(
      'initialize',
      this.middlewareStack.resolve('finalizeRequest', () => this.request(call), context),
      context,
    );
    return (await send({ input: call.query ?? call.body ?? {} })).output;
  }

  private async request(call: Call) {
    const base = this.url.pathname.replace(/\/$/, '');
    const request = new HttpRequest({
      protocol: this.url.protocol,
      hostname: this.url.hostname,
      ...(this.url.port ? { port: Number(this.url.port) } : {}),
      path: `${base}${call.path}`,
      method: call.method,
      headers: {
        host: this.url.host,
        ...(call.body ? { 'content-type': 'application/json' } : {}),
      },
      ...(call.query ? { query: call.query } : {}),
      ...(call.body ? { body: JSON.stringify(call.body) } : {}),
    });
    const signed = await this.signer.sign(request);
    const { response } = await this.options.requestHandler.handle(signed as HttpRequest);
    // Read whole (also so the connection returns to the pool).
    const text = response.body ? Buffer.from(await streamCollector(response.body)).toString('utf8') : '';
    const $metadata: ResponseMetadata = {
      httpStatusCode: response.statusCode,
      ...(response.headers['x-amzn-requestid'] ? { requestId: response.headers['x-amzn-requestid'] } : {}),
    };
    if (response.statusCode >= 300) throw serviceError(response, text, $metadata);
    return { output: { ...parseJson(text), $metadata }, response };
  }
}

/**
 * Named by the error type the API gives in `x-amzn-errortype` (`ResourceNotFoundException:…`),
 * else in the body. The body's `Type` is Lambda's class of fault (`User`, `Service`), not a name.
 */
function serviceError(response: HttpResponse, text: string, $metadata: ResponseMetadata): Error {
  const body = parseJson(text);
  const type = String(
    response.headers['x-amzn-errortype'] ?? body.__type ?? body.code ?? `Http${response.statusCode}Error`,
  );
  const name = type.split(':')[0]?.split('#').pop() || type;
  return Object.assign(
    new Error(String(body.message ?? body.Message ?? `Lambda answered ${response.statusCode}`)),
    {
      name,
      $fault: response.statusCode >= 500 || body.Type === 'Service' ? 'server' : 'client',
      $metadata,
    },
  );
}
