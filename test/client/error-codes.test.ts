import { describe, expect, it } from 'vitest';
import { API_ERROR_CODES } from '../../client/errors.js';
import { ERROR_CODES } from '../../functions/core/errors.js';

describe('error codes', () => {
  it('are the same list in the client and the server', () => {
    expect([...API_ERROR_CODES].sort()).toEqual([...ERROR_CODES].sort());
  });
});
