import dns from 'node:dns';
import tls from 'node:tls';
import { awsHostsSeen } from './aws-hosts.js';

/**
 * Preloaded (`node --import`) into the processes that run the Lambda bundles: every
 * `*.amazonaws.com` name resolves to this machine, and TLS connections to port 443 of those names
 * go to moto's port instead. The bundles keep their own endpoints (`dynamodb.<region>.amazonaws.com`,
 * `<bucket>.s3.<region>.amazonaws.com`, …) and verify moto's certificate against the test's CA
 * (NODE_EXTRA_CA_CERTS) under those names. Nothing can reach AWS itself: a name of AWS that is
 * not redirected resolves to 127.0.0.1 all the same.
 */

const AWS_HOST = /(^|\.)amazonaws\.com\.?$/i;
const port = Number(process.env.LEASEQ_TEST_AWS_PORT);
if (!Number.isInteger(port) || port <= 0)
  throw new Error('aws-at-moto: set LEASEQ_TEST_AWS_PORT to moto’s port');

const hosts = awsHostsSeen();

type LookupCallback = (err: Error | null, address: string | dns.LookupAddress[], family?: number) => void;
const lookup = dns.lookup;
dns.lookup = function (this: unknown, hostname: string, ...rest: unknown[]) {
  if (typeof hostname === 'string' && AWS_HOST.test(hostname)) {
    const callback = rest.at(-1) as LookupCallback;
    const options = rest.length > 1 ? rest[0] : undefined;
    const all = typeof options === 'object' && options !== null && (options as dns.LookupOptions).all;
    process.nextTick(() =>
      all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4),
    );
    return;
  }
  return Reflect.apply(lookup, this, [hostname, ...rest]);
} as typeof dns.lookup;

const connect = tls.connect;
tls.connect = function (this: unknown, ...args: unknown[]) {
  const [first] = args;
  if (typeof first === 'object' && first !== null) {
    const options = first as tls.ConnectionOptions;
    const host = options.host ?? options.servername;
    if (host && AWS_HOST.test(host)) {
      if ((options.port ?? 443) !== 443)
        throw new Error(`aws-at-moto: ${host}:${options.port} is not redirected`);
      hosts.add(host);
      // The name stays the server's (SNI and the certificate check); only the port is moto's.
      args[0] = { ...options, port, servername: options.servername ?? host };
    }
  }
  return Reflect.apply(connect, this, args);
} as typeof tls.connect;
