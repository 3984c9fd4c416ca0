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
  }
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
