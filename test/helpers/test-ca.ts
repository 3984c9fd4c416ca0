import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A certificate authority of the test's own and a server certificate it signed for `names`, made
 * with openssl in `dir`: a server (moto) presents the certificate, and a Node process that is given
 * the CA (NODE_EXTRA_CA_CERTS) verifies it as it verifies AWS's, no verification turned off.
 */
export interface TestCertificate {
  /** PEM files. */
  ca: string;
  cert: string;
  key: string;
}

export function makeTestCertificate(dir: string, names: string[]): TestCertificate {
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) =>
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
    '-days',
    '1',
    '-subj',
    '/CN=leaseq test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
  );
  openssl(
    'req',
    ...ec,
    '-keyout',
    file('server.key'),
    '-out',
    file('server.csr'),
    '-subj',
    `/CN=${names[0]}`,
  );
  writeFileSync(
    file('server.ext'),
    `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}\nextendedKeyUsage=serverAuth\n`,
  );
  openssl(
    'x509',
    '-req',
    '-in',
    file('server.csr'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca.key'),
    '-set_serial',
    '1',
    '-days',
    '1',
    '-extfile',
    file('server.ext'),
    '-out',
    file('server.pem'),
  );
  return { ca: file('ca.pem'), cert: file('server.pem'), key: file('server.key') };
}
