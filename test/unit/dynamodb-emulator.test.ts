import { describe, expect, it } from 'vitest';
import { parseDynamoDbEmulator } from '../../infra/local/emulators.js';

describe('LEASEQ_DYNAMODB', () => {
  it('defaults to dynalite when unset or empty', () => {
    expect(parseDynamoDbEmulator(undefined)).toBe('dynalite');
    expect(parseDynamoDbEmulator('')).toBe('dynalite');
  });

  it('takes dynamodb-local, and refuses anything else with the variable named', () => {
    expect(parseDynamoDbEmulator('dynamodb-local')).toBe('dynamodb-local');
    expect(() => parseDynamoDbEmulator('DynamoDBLocal')).toThrow(
      'LEASEQ_DYNAMODB must be dynalite or dynamodb-local, not "DynamoDBLocal"',
    );
  });
});
