import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { doesIdentityRequireRefresh, isIdentityExpired, memoizeIdentityProvider } from '@smithy/core';
import {
  isClockSkewError,
  isServerError,
  isThrottlingError,
  isTransientError,
  StandardRetryStrategy,
} from '@smithy/core/retry';
import { HttpRequest } from '@smithy/core/transport';
import { type NodeHttpHandler, streamCollector } from '@smithy/node-http-handler';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider, HttpResponse } from '@smithy/types';
import type { AnyArgs, AnyMiddleware, AnyResult, MiddlewareContext } from './sdk-client.js';
import { Sha256 } from './sha256.js';

/**
 * The AWS JSON protocol (DynamoDB, Kinesis) over the SDK's own parts: its SigV4 signer, HTTP
 * handler, standard retry strategy and error classification. What is ours is the envelope: a
 * POST of the input as JSON with the operation in `X-Amz-Target`, and the answer or the error
 * read back. The generated clients carry every operation's schema, endpoint rules and event
 * streams: ~190 KB of each Lambda bundle for the handful of calls leaseq makes
 * (docs/decisions/0019-aws-json-without-generated-clients.md).
 */

/** One call: its operation, its input, and how the answer becomes the output leaseq reads. */
export interface AwsCommand<Input extends object, Output> {
  readonly operation: string;
  readonly input: Input;
  /** The input as it goes on the wire (before JSON: blobs and dates are encoded by `wireJson`). */
  toWire(input: Input): object;
  fromWire(output: WireOutput): Output;
}

/** A class of commands for one operation, used as the SDK's are: `new GetCommand(input)`. */
export function commandClass<Input extends object, Output>(
  operation: string,
  toWire: (input: Input) => object,
  fromWire: (output: WireOutput) => unknown,
) {
  return class implements AwsCommand<Input, Output> {
    readonly operation = operation;
    constructor(readonly input: Input) {}
    toWire(input: Input): object {
      return toWire(input);
    }
    fromWire(output: WireOutput): Output {
      return fromWire(output) as Output;
    }
  };
}

/** A JSON answer with the SDK's `$metadata` beside it. */
export type WireOutput = Record<string, unknown> & { $metadata: ResponseMetadata };

export interface ResponseMetadata {
  httpStatusCode?: number;
  requestId?: string;
  attempts?: number;
  totalRetryDelay?: number;
  clockSkewCorrected?: boolean;
}

export interface AwsJsonService {
  /** What calls are counted and matched by: `DynamoDB` gives `DynamoDB.PutItem`. */
  name: string;
  /** Signs for it and names its host (`dynamodb.<region>.amazonaws.com`). */
  signingName: string;
  targetPrefix: string;
  jsonVersion: '1.0' | '1.1';
  /** Turns the wire's encodings back while the answer is parsed (DynamoDB's base64 `B`). */
  reviver?: (key: string, value: unknown) => unknown;
}

export interface AwsJsonClientConfig {
  region: string;
  /** A local emulator; default the service's regional endpoint. */
  endpoint?: string;
  /** Default the SDK's default chain (in Lambda bundles: the environment, aws/lambda-credentials.ts). */
  credentials?: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  maxAttempts: number;
  requestHandler: NodeHttpHandler;
}

/** The strategy's token records the backoff it waited out (its own sleep, since 2026). */
type RetryLogged = { $retryLog?: { acquisitionDelay?: number } };

type Step = 'initialize' | 'finalizeRequest';
const PRIORITY = { high: 0, normal: 1, low: 2 } as const;

interface StackEntry {
  middleware: AnyMiddleware;
  step: Step;
  name: string;
  priority: keyof typeof PRIORITY;
}

/**
 * Where the meter and fault injection hook in, as on an SDK client: `initialize` wraps a call with
 * its retries, `finalizeRequest` each attempt. Within a step, high priority runs outermost, and
 * among equals the first added.
 */
export class MiddlewareStack {
  private entries: StackEntry[] = [];

  add(
    middleware: AnyMiddleware,
    options: { step: Step; name: string; priority?: 'high' | 'normal' | 'low'; override?: boolean },
  ): void {
    const entries = options.override ? this.entries.filter((e) => e.name !== options.name) : this.entries;
    const entry = {
      middleware,
      step: options.step,
      name: options.name,
      priority: options.priority ?? 'normal',
    };
    // Kept in running order (a stable sort), so a call only picks its step's.
    this.entries = [...entries, entry].sort((a, b) => PRIORITY[a.priority] - PRIORITY[b.priority]);
  }

  resolve(
    step: Step,
    inner: (args: AnyArgs) => Promise<AnyResult>,
    context: MiddlewareContext,
  ): (args: AnyArgs) => Promise<AnyResult> {
    return this.entries
      .filter((e) => e.step === step)
      .reduceRight((next, e) => e.middleware(next, context), inner);
  }
}

/** Blobs travel as base64 and timestamps as epoch seconds (the JSON protocol's encodings). */
function wireJson(value: unknown): string {
  return JSON.stringify(value, function (this: Record<string, unknown>, key, encoded) {
    const raw = this[key];
    if (raw instanceof Uint8Array)
      return Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('base64');
    if (raw instanceof Date) return raw.getTime() / 1000;
    return encoded;
  });
}

const CLOCK_SKEW_MS = 300_000;

/** One call's own terms. */
export interface SendOptions {
  /**
   * Fewer attempts than the client's: for a caller with a better answer to an error than the
   * SDK's backoff (a throttled read waits up to a second there).
   */
  maxAttempts?: number;
}

export class AwsJsonClient {
  readonly middlewareStack = new MiddlewareStack();
  readonly config: { credentials: AwsCredentialIdentityProvider };
  private readonly url: URL;
  private readonly signer: SignatureV4;
  private readonly retry: StandardRetryStrategy;
  /** Server time less ours, learnt from a clock-skew refusal, as the SDK does. */
  private clockOffset = 0;

  constructor(
    private readonly service: AwsJsonService,
    private readonly options: AwsJsonClientConfig,
  ) {
    const suffix = options.region.startsWith('cn-') ? 'amazonaws.com.cn' : 'amazonaws.com';
    this.url = new URL(options.endpoint ?? `https://${service.signingName}.${options.region}.${suffix}`);
    // Asked once and kept until 5 minutes before it expires, as the SDK's clients keep it.
    const credentials = memoizeIdentityProvider(
      options.credentials ?? defaultProvider(),
      isIdentityExpired,
      doesIdentityRequireRefresh,
    ) as AwsCredentialIdentityProvider;
    this.config = { credentials };
    this.signer = new SignatureV4({
      service: service.signingName,
      region: options.region,
      credentials: this.config.credentials,
      sha256: Sha256,
    });
    this.retry = new StandardRetryStrategy(options.maxAttempts);
  }

  async send<Input extends object, Output>(
    command: AwsCommand<Input, Output>,
    options: SendOptions = {},
  ): Promise<Output> {
    const context: MiddlewareContext = {
      clientName: `${this.service.name}Client`,
      commandName: `${command.operation}Command`,
    };
    const call = this.middlewareStack.resolve(
      'initialize',
      async (args) => ({
        output: await this.attempts(command, args.input, context, options),
        response: undefined,
      }),
      context,
    );
    return (await call({ input: command.input })).output as Output;
  }

  /** The SDK's retry loop (its retryMiddleware) with its standard strategy. */
  private async attempts<Input extends object, Output>(
    command: AwsCommand<Input, Output>,
    input: Input,
    context: MiddlewareContext,
    options: SendOptions,
  ): Promise<Output> {
    const body = wireJson(command.toWire(input));
    const attempt = this.middlewareStack.resolve(
      'finalizeRequest',
      () => this.request(command.operation, body),
      context,
    );
    // A call's own attempts: the same standard strategy, counting them for this call alone.
    const retry =
      options.maxAttempts === undefined ? this.retry : new StandardRetryStrategy(options.maxAttempts);
    let token = await retry.acquireInitialRetryToken('');
    let totalRetryDelay = 0;
    for (;;) {
      try {
        const { output } = await attempt({ input });
        retry.recordSuccess(token);
        const wire = output as WireOutput;
        wire.$metadata = { ...wire.$metadata, attempts: token.getRetryCount() + 1, totalRetryDelay };
        return command.fromWire(wire);
      } catch (err) {
        const error = err as Error & { $metadata?: ResponseMetadata };
        try {
          token = await retry.refreshRetryTokenForRetry(token, { errorType: retryErrorType(error) });
        } catch {
          error.$metadata = { ...error.$metadata, attempts: token.getRetryCount() + 1, totalRetryDelay };
          throw error;
        }
        const delay = token.getRetryDelay();
        totalRetryDelay += ((token as RetryLogged).$retryLog?.acquisitionDelay ?? 0) + delay;
        if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }

  private async request(operation: string, body: string): Promise<AnyResult> {
    const request = new HttpRequest({
      protocol: this.url.protocol,
      hostname: this.url.hostname,
      ...(this.url.port ? { port: Number(this.url.port) } : {}),
      path: this.url.pathname,
      method: 'POST',
      headers: {
        host: this.url.host,
        'content-type': `application/x-amz-json-${this.service.jsonVersion}`,
        'x-amz-target': `${this.service.targetPrefix}.${operation}`,
      },
      body,
    });
    const signed = await this.signer.sign(request, { signingDate: new Date(Date.now() + this.clockOffset) });
    const { response } = await this.options.requestHandler.handle(signed as HttpRequest);
    const text = response.body ? Buffer.from(await streamCollector(response.body)).toString('utf8') : '';
    const $metadata: ResponseMetadata = {
      httpStatusCode: response.statusCode,
      ...(response.headers['x-amzn-requestid'] ? { requestId: response.headers['x-amzn-requestid'] } : {}),
    };
    if (response.statusCode < 300)
      return { output: { ...answerOf(text, $metadata, this.service.reviver), $metadata }, response };
    const error = serviceError(response, text, $metadata);
    this.learnClockSkew(error, response);
    throw error;
  }

  /** A refusal for a skewed clock, with the server's time: sign with it from now on and retry. */
  private learnClockSkew(error: Error & { $metadata: ResponseMetadata }, response: HttpResponse): void {
    const serverTime = Date.parse(response.headers.date ?? '');
    if (!isClockSkewError(error as Classified) || Number.isNaN(serverTime)) return;
    const offset = serverTime - Date.now();
    if (Math.abs(offset - this.clockOffset) < CLOCK_SKEW_MS) return;
    this.clockOffset = offset;
    error.$metadata.clockSkewCorrected = true;
  }

  destroy(): void {
    this.options.requestHandler.destroy();
  }
}

/** The classifier's view of an error: its name, `$metadata`, `$retryable` and `code`. */
type Classified = Parameters<typeof isTransientError>[0];

function retryErrorType(err: Error): 'THROTTLING' | 'TRANSIENT' | 'SERVER_ERROR' | 'CLIENT_ERROR' {
  const error = err as Classified;
  if (isThrottlingError(error)) return 'THROTTLING';
  if (isTransientError(error)) return 'TRANSIENT';
  if (isServerError(error)) return 'SERVER_ERROR';
  return 'CLIENT_ERROR';
}

/**
 * A success's body. One that is not a JSON object is an error, not an empty answer (which a GetItem
 * would read as "no such item"); marked a server fault, so the API answers 503, never 500.
 */
function answerOf(
  text: string,
  $metadata: ResponseMetadata,
  reviver: AwsJsonService['reviver'],
): Record<string, unknown> {
  try {
    const parsed: unknown = text ? JSON.parse(text, reviver) : {};
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
      return parsed as Record<string, unknown>;
  } catch {
    // Reported below, with the answer's metadata.
  }
  throw Object.assign(new Error(`an answer that is not a JSON object (${text.length} bytes)`), {
    name: 'DeserializationError',
    $fault: 'server',
    $metadata,
  });
}

/** An error's body, as far as it is JSON (a proxy's page is not). */
export function parseJson(text: string): Record<string, unknown> {
  if (!text) return {};
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * The error the SDK would raise: named by the service's error type (`…#ConditionalCheckFailedException`
 * → `ConditionalCheckFailedException`), with the body's other members, `$fault` and `$metadata`.
 */
function serviceError(
  response: HttpResponse,
  text: string,
  $metadata: ResponseMetadata,
): Error & { $metadata: ResponseMetadata } {
  const { __type, message, Message, ...members } = parseJson(text);
  const type = String(response.headers['x-amzn-errortype'] ?? __type ?? `Http${response.statusCode}Error`);
  const name = type.split(':')[0]?.split('#').pop() || type;
  return Object.assign(new Error(String(message ?? Message ?? name)), members, {
    name,
    $fault: response.statusCode >= 500 ? 'server' : 'client',
    $metadata,
  });
}
