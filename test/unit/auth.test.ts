import { describe, expect, it } from 'vitest';
import { hashApiKey, KeyRing, requireScope } from '../../functions/core/auth.js';
import { ForbiddenError, UnauthenticatedError } from '../../functions/core/errors.js';

const ring = new KeyRing([
  { name: 'producer', sha256: hashApiKey('key-p'), scopes: ['produce:jobs'] },
  { name: 'ops', sha256: hashApiKey('key-o'), scopes: ['admin:*', 'consume:*'] },
]);

describe('API keys and scopes', () => {
  it('finds the principal of a bearer key by its hash', () => {
    expect(ring.authenticate('Bearer key-p').name).toBe('producer');
    expect(ring.authenticate('bearer   key-o').name).toBe('ops');
  });

  it.each([undefined, '', 'Bearer', 'Basic key-p', 'Bearer key-p extra', 'Bearer nope'])(
    'rejects %j as unauthenticated',
    (header) => {
      expect(() => ring.authenticate(header)).toThrow(UnauthenticatedError);
    },
  );

  it('grants a scope for its queue or for every queue, and nothing else', () => {
    const producer = ring.authenticate('Bearer key-p');
    const ops = ring.authenticate('Bearer key-o');
    expect(() => requireScope(producer, 'produce', 'jobs')).not.toThrow();
    expect(() => requireScope(producer, 'produce', 'ledger')).toThrow(ForbiddenError);
    expect(() => requireScope(producer, 'consume', 'jobs')).toThrow(ForbiddenError);
    expect(() => requireScope(ops, 'admin', 'anything')).not.toThrow();
    expect(() => requireScope(ops, 'produce', 'jobs')).toThrow(ForbiddenError);
  });

  it('finds a configured key by its name (what SQS credentials made for it act as), the first of a name', () => {
    expect(ring.findByName('ops')).toEqual({ name: 'ops', scopes: ['admin:*', 'consume:*'] });
    expect(ring.findByName('nobody')).toBeUndefined();
    const twice = new KeyRing([
      { name: 'admin', sha256: hashApiKey('file'), scopes: ['consume:*'] },
      { name: 'admin', sha256: hashApiKey('extra'), scopes: ['admin:*'] },
    ]);
    expect(twice.findByName('admin')?.scopes).toEqual(['consume:*']);
  });
});
