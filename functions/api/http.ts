import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type * as z from 'zod/mini';
import { isTransientAwsError } from '../aws/transient.js';
import { MESSAGE_ID } from '../core/envelope.js';
import {
  InvalidRequestError,
  isLeaseqError,
  type LeaseqError,
  MethodNotAllowedError,
  NotFoundError,
  PayloadTooLargeError,
  UnavailableError,
  UnsupportedMediaTypeError,
} from '../core/errors.js';
import { issuesOf } from '../core/validation.js';
import { MAX_BODY_BYTES } from '../wire/requests.js';

/** HTTP edge helpers: JSON bodies in, JSON responses and the error format out. */

export type HttpResponse = APIGatewayProxyStructuredResultV2;

export function json(statusCode: number, body: unknown, headers: Record<string, string> = {}): HttpResponse {
  return {
    statusCode,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  };
}

export function noContent(): HttpResponse {
  return { statusCode: 204, headers: {}, body: '' };
}

/** Maps any error to the error format of docs/contract.md, "Authentication and errors". Only a bug reaches the 500 branch. */
export function errorResponse(err: unknown): {
  response: HttpResponse;
  internal: boolean;
  code: string;
  message: string;
} {
  const known = asLeaseqError(err);
  if (!known) {
    const message = 'internal error; this is a bug in leaseq';
    return {
      internal: true,
      code: 'INTERNAL',
      message,
      response: json(500, { error: { code: 'INTERNAL', message } }),
    };
  }
  const error: Record<string, unknown> = { code: known.code, message: known.message };
  if (known.details) error.details = known.details;
  const headers: Record<string, string> = known.retryAfter ? { 'retry-after': String(known.retryAfter) } : {};
  return {
    internal: false,
    code: known.code,
    message: known.message,
    response: json(known.status, { error }, headers),
  };
}

function asLeaseqError(err: unknown): LeaseqError | undefined {
  if (isLeaseqError(err)) return err;
  // The router raises middy http errors for unknown paths.
  const status = (err as { statusCode?: number })?.statusCode;
  if (status === 404) return new NotFoundError();
  if (status === 405) return new MethodNotAllowedError('this method', 'this path');
  if (isTransientAwsError(err)) return new UnavailableError();
  return undefined;
}

export function header(
  event: Pick<APIGatewayProxyEventV2, 'headers'> | { headers?: Record<string, string | undefined> },
  name: string,
): string | undefined {
  const wanted = name.toLowerCase();
  for (const [k, v] of Object.entries(event.headers ?? {})) if (k.toLowerCase() === wanted) return v;
  return undefined;
}

/** Reads and validates a JSON body: 415 for another media type, 413 over 5 MB, 400 otherwise. */
export function parseBody<S extends z.ZodMiniType>(event: APIGatewayProxyEventV2, schema: S): z.infer<S> {
  const contentType = header(event, 'content-type');
  if (!contentType || !/^application\/json\b/i.test(contentType.trim()))
    throw new UnsupportedMediaTypeError();
  const raw = event.body ?? '';
  const bytes = event.isBase64Encoded ? Buffer.from(raw, 'base64') : Buffer.from(raw, 'utf8');
  if (bytes.byteLength > MAX_BODY_BYTES) {
    throw new PayloadTooLargeError(
      `the request body is ${bytes.byteLength} bytes; the limit is ${MAX_BODY_BYTES}`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new InvalidRequestError('the body is not valid JSON', [
      { path: '(body)', message: 'not valid JSON' },
    ]);
  }
  if (jsonDepth(value) > MAX_JSON_DEPTH) {
    throw new InvalidRequestError(`the body nests deeper than ${MAX_JSON_DEPTH} levels`, [
      { path: '(body)', message: `at most ${MAX_JSON_DEPTH} levels of nesting` },
    ]);
  }
  return validate(schema, value);
}

export function validate<S extends z.ZodMiniType>(schema: S, value: unknown): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = issuesOf(result.error, '(body)');
  throw new InvalidRequestError(
    `the request is invalid: ${issues
      .slice(0, 5)
      .map((i) => `${i.path}: ${i.message}`)
      .join('; ')}`,
    issues,
  );
}

/** Path parameters arrive percent-encoded from the router; each is checked against its shape. */
export function pathParam(
  event: APIGatewayProxyEventV2,
  name: string,
  shape?: { pattern: RegExp; message: string },
): string {
  const raw = event.pathParameters?.[name];
  if (raw === undefined) throw new NotFoundError();
  let value: string;
  try {
    value = decodeURIComponent(raw);
  } catch {
    throw new InvalidRequestError(`the path parameter ${name} is not valid percent-encoding`, [
      { path: name, message: 'not valid percent-encoding' },
    ]);
  }
  if (shape && !shape.pattern.test(value)) {
    throw new InvalidRequestError(`the path parameter ${name} is invalid: ${shape.message}`, [
      { path: name, message: shape.message },
    ]);
  }
  return value;
}

/** Shapes of path parameters (docs/contract.md): ids, keys and names as the API defines them. */
export const PARAM = {
  messageId: { pattern: MESSAGE_ID, message: '1-128 of [A-Za-z0-9_.:-]' },
  key: { pattern: /^[\s\S]{1,256}$/u, message: '1-256 characters' },
  redriveId: { pattern: /^[A-Za-z0-9-]{1,64}$/, message: '1-64 of [A-Za-z0-9-]' },
  replayId: { pattern: /^[A-Za-z0-9-]{1,64}$/, message: '1-64 of [A-Za-z0-9-]' },
  retentionId: { pattern: /^[A-Za-z0-9-]{1,64}$/, message: '1-64 of [A-Za-z0-9-]' },
  keyName: { pattern: /^[A-Za-z0-9_.-]{1,64}$/, message: '1-64 of [A-Za-z0-9_.-]' },
};

/** Deeper documents only serve to make every later reader of the payload work harder. */
export const MAX_JSON_DEPTH = 32;

/** Nesting depth of a parsed JSON value, without recursion (so a hostile body cannot overflow the stack). */
export function jsonDepth(value: unknown): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (v === null || typeof v !== 'object') continue;
    max = Math.max(max, depth + 1);
    if (max > MAX_JSON_DEPTH) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
  return max;
}
