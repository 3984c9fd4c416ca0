/**
 * Whether an error from an AWS call is one that a later retry can get past (throttling,
 * a server fault, a timeout or a dropped connection). The SDK has already retried it;
 * the API answers 503 with Retry-After for these, never 500.
 */
const TRANSIENT_NAMES = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'Throttling',
  'ThrottledException',
  'RequestLimitExceeded',
  'RequestThrottledException',
  'SlowDown',
  'LimitExceededException',
  'KMSThrottlingException',
  'InternalServerError',
  'InternalFailure',
  'ServiceUnavailable',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
]);

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EAI_AGAIN', 'ENOTFOUND']);

export function isTransientAwsError(err: unknown): boolean {
  const e = err as { name?: string; code?: string; $fault?: string; $retryable?: unknown } | undefined;
  if (!e || typeof e !== 'object') return false;
  if (e.name && TRANSIENT_NAMES.has(e.name)) return true;
  if (e.code && NETWORK_CODES.has(e.code)) return true;
  return e.$fault === 'server' || Boolean(e.$retryable);
}
