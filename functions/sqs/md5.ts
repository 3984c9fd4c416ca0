import { createHash } from 'node:crypto';
import type { MessageAttributes } from '../core/envelope.js';

/**
 * The digests SQS answers beside a message, which SQS clients check: of the body (UTF-8), and of
 * the message attributes in SQS's documented encoding (by name; each name, data type and value
 * length-prefixed, the value after a transport byte: 1 for String and Number, 2 for Binary).
 */

export function md5OfBody(body: string): string {
  return createHash('md5').update(body, 'utf8').digest('hex');
}

export function md5OfAttributes(attributes: MessageAttributes | undefined): string | undefined {
  const names = Object.keys(attributes ?? {}).sort();
  if (!attributes || !names.length) return undefined;
  const hash = createHash('md5');
  const field = (bytes: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    hash.update(length);
    hash.update(bytes);
  };
  for (const name of names) {
    const a = attributes[name] as MessageAttributes[string];
    field(Buffer.from(name, 'utf8'));
    field(Buffer.from(a.data_type, 'utf8'));
    if (a.data_type.startsWith('Binary')) {
      hash.update(Buffer.from([2]));
      field(Buffer.from(a.binary_value ?? '', 'base64'));
    } else {
      hash.update(Buffer.from([1]));
      field(Buffer.from(a.string_value ?? '', 'utf8'));
    }
  }
  return hash.digest('hex');
}
