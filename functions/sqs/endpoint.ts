import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { SqsAuthenticator, type SqsAuthenticatorDeps } from '../access/sigv4-verifier.js';
import { type HttpResponse, header } from '../api/http.js';
import type { ApiServices } from '../api/route.js';
import { isTransientAwsError } from '../aws/transient.js';
import { isLeaseqError } from '../core/errors.js';
import { perObject } from '../core/per-object.js';
import { MAX_BODY_BYTES } from '../wire/requests.js';
import { ACTIONS, USAGE_KINDS } from './actions.js';
import { isSqsError, SqsError } from './errors.js';

/**
 * The SQS-compatible endpoint: `POST /` with `x-amz-target: AmazonSQS.<Action>` and an AWS JSON
 * 1.0 body, as current AWS SDKs speak SQS. Every request is SigV4-signed with SQS credentials of
 * an API key (access/); its scopes and quotas apply as on this API's routes. Errors are in SQS's
 * shape, never leaseq's: an SQS client must understand every answer.
 */

/**
 * The verifier of each function instance's signed requests, built here, in the file the first SQS
 * request loads: it keeps what it read (credentials, opened secrets) for later requests.
 */
const verifierOf = perObject((deps: SqsAuthenticatorDeps) => new SqsAuthenticator(deps));

const TARGET_PREFIX = 'AmazonSQS.';
const CONTENT_TYPE = 'application/x-amz-json-1.0';

export async function sqsEndpoint(
  event: APIGatewayProxyEventV2,
  services: ApiServices,
): Promise<HttpResponse> {
  const requestId = randomUUID();
  try {
    const target = header(event, 'x-amz-target') ?? '';
    const name = target.startsWith(TARGET_PREFIX) ? target.slice(TARGET_PREFIX.length) : undefined;
    const action = name !== undefined && Object.hasOwn(ACTIONS, name) ? ACTIONS[name] : undefined;
    if (!action)
      throw new SqsError(
        'InvalidAction',
        400,
        name === undefined
          ? 'Send an SQS action in the x-amz-target header (AmazonSQS.<Action>).'
          : `The action ${name} is not valid for this endpoint.`,
      );
    if (!(header(event, 'content-type') ?? '').toLowerCase().startsWith(CONTENT_TYPE))
      throw new SqsError(
        'UnsupportedOperation',
        400,
        `leaseq speaks SQS's AWS JSON 1.0 protocol (content-type: ${CONTENT_TYPE}), which current AWS SDKs use.`,
      );
    const bytes = Buffer.from(event.body ?? '', event.isBase64Encoded ? 'base64' : 'utf8');
    if (bytes.byteLength > MAX_BODY_BYTES)
      throw new SqsError(
        'InvalidParameterValue',
        400,
        `The request is ${bytes.byteLength} bytes; the limit is ${MAX_BODY_BYTES}.`,
      );
    const body = bytes.toString('utf8');
    const principal = await verifierOf(services.sqsAuth).authenticate({
      method: event.requestContext.http.method,
      path: event.rawPath,
      query: Object.fromEntries(
        Object.entries(event.queryStringParameters ?? {}).flatMap(([k, v]) =>
          v === undefined ? [] : [[k, v]],
        ),
      ),
      headers: event.headers ?? {},
      body,
    });
    const result = await action({
      event,
      services,
      principal,
      origin: originOf(event),
      bodyBytes: bytes.byteLength,
      input: parseJson(body),
      kind: (name && USAGE_KINDS[name]) || 'other',
    });
    return answer(200, result, requestId);
  } catch (err) {
    const error = asSqsError(err);
    if (!error) {
      services.logger.error('unhandled error in the SQS endpoint', err as Error);
      return answer(
        500,
        { __type: 'com.amazonaws.sqs#InternalError', message: 'internal error; this is a bug in leaseq' },
        requestId,
        {
          'x-amzn-query-error': 'InternalError;Receiver',
        },
      );
    }
    return answer(
      error.status,
      { __type: `com.amazonaws.sqs#${error.code}`, message: error.message },
      requestId,
      {
        'x-amzn-query-error': `${queryCode(error.code)};${error.sender ? 'Sender' : 'Receiver'}`,
        ...(isLeaseqError(err) && err.retryAfter ? { 'retry-after': String(err.retryAfter) } : {}),
      },
    );
  }
}

function answer(
  status: number,
  body: unknown,
  requestId: string,
  headers: Record<string, string> = {},
): HttpResponse {
  return {
    statusCode: status,
    headers: { 'content-type': CONTENT_TYPE, 'x-amzn-requestid': requestId, ...headers },
    body: JSON.stringify(body),
  };
}

function parseJson(body: string): unknown {
  if (!body.trim()) return {};
  try {
    return JSON.parse(body);
  } catch {
    throw new SqsError('InvalidParameterValue', 400, 'The request body is not JSON.');
  }
}

/** The endpoint as the client called it: the scheme API Gateway forwards (http on the local runtime). */
function originOf(event: APIGatewayProxyEventV2): string {
  const proto = header(event, 'x-forwarded-proto') ?? 'http';
  return `${proto}://${header(event, 'host') ?? event.requestContext.domainName}`;
}

/** leaseq's own errors as SQS says them; undefined for a bug. */
function asSqsError(err: unknown): SqsError | undefined {
  if (isSqsError(err)) return err;
  if (isLeaseqError(err)) {
    switch (err.code) {
      case 'QUEUE_NOT_FOUND':
        return new SqsError('QueueDoesNotExist', 400, 'The specified queue does not exist.');
      case 'FORBIDDEN':
        return new SqsError('AccessDenied', 403, err.message);
      case 'UNAUTHENTICATED':
        return new SqsError('InvalidClientTokenId', 403, err.message);
      case 'QUOTA_EXCEEDED':
        return new SqsError('RequestThrottled', 403, err.message);
      case 'STALE_RECEIPT':
        return new SqsError('ReceiptHandleIsInvalid', 404, err.message);
      case 'UNAVAILABLE':
        return new SqsError('ServiceUnavailable', 503, err.message, false);
      default:
        return new SqsError('InvalidParameterValue', 400, err.message);
    }
  }
  if (isTransientAwsError(err))
    return new SqsError('ServiceUnavailable', 503, 'the queue is busy, retry shortly', false);
  return undefined;
}

/** The code SQS's query protocol used, which the SDKs read from `x-amzn-query-error`. */
function queryCode(code: string): string {
  switch (code) {
    case 'QueueDoesNotExist':
      return 'AWS.SimpleQueueService.NonExistentQueue';
    case 'BatchEntryIdsNotDistinct':
    case 'EmptyBatchRequest':
    case 'InvalidBatchEntryId':
    case 'TooManyEntriesInBatchRequest':
    case 'MessageNotInflight':
    case 'UnsupportedOperation':
      return `AWS.SimpleQueueService.${code}`;
    default:
      return code;
  }
}
