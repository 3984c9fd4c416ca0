/**
 * Errors of the SQS-compatible endpoint, in SQS's shape: the AWS JSON 1.0 protocol answers
 * `{"__type": "com.amazonaws.sqs#<Code>", "message"}` with the status SQS uses, and the
 * `x-amzn-query-error: <code>;Sender|Receiver` header the SDKs read for SQS's query-compatible
 * codes. Kept apart from leaseq's own errors (core/errors.ts): the codes are SQS's, not ours.
 */

export type SqsErrorCode =
  | 'AccessDenied'
  | 'BatchEntryIdsNotDistinct'
  | 'EmptyBatchRequest'
  | 'InvalidAction'
  | 'InvalidAddress'
  | 'InvalidAttributeName'
  | 'InvalidBatchEntryId'
  | 'InvalidClientTokenId'
  | 'InvalidMessageContents'
  | 'InvalidParameterValue'
  | 'InvalidSecurity'
  | 'MessageNotInflight'
  | 'MissingAuthenticationToken'
  | 'MissingParameter'
  | 'QueueDoesNotExist'
  | 'ReceiptHandleIsInvalid'
  | 'RequestThrottled'
  | 'ServiceUnavailable'
  | 'SignatureDoesNotMatch'
  | 'TooManyEntriesInBatchRequest'
  | 'UnsupportedOperation';

/** Marks SQS errors, whichever copy of this module made them (isSqsError). */
const SQS_ERROR = Symbol.for('leaseq.sqs-error');

export class SqsError extends Error {
  constructor(
    readonly code: SqsErrorCode,
    readonly status: number,
    message: string,
    /** The caller's fault (`Sender`) or ours (`Receiver`). */
    readonly sender = true,
  ) {
    super(message);
    this.name = new.target.name;
    Object.defineProperty(this, SQS_ERROR, { value: true });
  }
}

/**
 * Whether `err` is an SQS error: the endpoint is a file of its own in the api's bundle
 * (sqs/route.ts), and the SigV4 check that throws SqsAuthError is in the bundle itself.
 */
export function isSqsError(err: unknown): err is SqsError {
  return err instanceof SqsError || (typeof err === 'object' && err !== null && SQS_ERROR in err);
}

/** A request that is not signed, or not signed by credentials leaseq gave out, or signed wrongly. */
export class SqsAuthError extends SqsError {
  constructor(
    code: 'MissingAuthenticationToken' | 'InvalidClientTokenId' | 'SignatureDoesNotMatch' | 'AccessDenied',
    message: string,
  ) {
    super(code, 403, message);
  }
}
