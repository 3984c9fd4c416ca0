import { Sha256 as SmithySha256 } from '@smithy/core/checksum';
import { HttpRequest } from '@smithy/core/transport';
import { SignatureV4 } from '@smithy/signature-v4';
import type { ChecksumConstructor, HashConstructor } from '@smithy/types';
import { describe, expect, it } from 'vitest';
import { Sha256 } from '../../functions/aws/sha256.js';

/** The signer's SHA-256 on node:crypto (functions/aws/sha256.ts) signs as the SDK's own does. */

// AWS's SigV4 test suite, "get-vanilla": its request, credentials and published signature.
const VANILLA_SIGNATURE = '5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31';

async function signVanilla(sha256: ChecksumConstructor | HashConstructor): Promise<string> {
  const signer = new SignatureV4({
    service: 'service',
    region: 'us-east-1',
    credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
    sha256,
    applyChecksum: false,
  });
  const request = new HttpRequest({
    method: 'GET',
    protocol: 'https:',
    hostname: 'example.amazonaws.com',
    path: '/',
    headers: { host: 'example.amazonaws.com' },
  });
  const signed = await signer.sign(request, { signingDate: new Date('2015-08-30T12:36:00Z') });
  return String(signed.headers.authorization);
}

describe('Sha256', () => {
  it("signs AWS's get-vanilla request to its published signature, as the SDK's Sha256 does", async () => {
    const ours = await signVanilla(Sha256);
    expect(ours).toBe(
      `AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=${VANILLA_SIGNATURE}`,
    );
    expect(await signVanilla(SmithySha256)).toBe(ours);
  });

  it('hashes strings, byte views and buffers alike, and keys an HMAC with any of them', async () => {
    const digest = async (
      secret: ConstructorParameters<typeof Sha256>[0],
      data: ConstructorParameters<typeof Sha256>[0],
    ) => {
      const hash = new Sha256(secret);
      hash.update(data ?? '');
      return Buffer.from(await hash.digest()).toString('hex');
    };
    const abc = new TextEncoder().encode('abc');
    // FIPS 180-2's "abc" vector.
    const expected = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';
    expect(await digest(undefined, 'abc')).toBe(expected);
    expect(await digest(undefined, abc)).toBe(expected);
    expect(await digest(undefined, abc.buffer)).toBe(expected);
    expect(await digest(undefined, new DataView(new Uint8Array([0, 97, 98, 99]).buffer, 1))).toBe(expected);
    const keyed = await digest('key', 'abc');
    expect(await digest(new TextEncoder().encode('key'), abc)).toBe(keyed);
    expect(keyed).not.toBe(expected);
  });
});
