/**
 * Thrown by a Lambda consumer's handler for a message that no retry can fix (it cannot be
 * parsed, it refers to something deleted): the message goes to the DLQ at once instead of
 * using up its attempts.
 */
export class NonRetryableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NonRetryableError';
  }
}

/** By name, so the client SDK's class of the same name (`leaseq/client`) counts too. */
export function isNonRetryable(err: unknown): boolean {
  return err instanceof Error && err.name === 'NonRetryableError';
}
