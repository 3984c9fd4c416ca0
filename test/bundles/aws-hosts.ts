/** The names of AWS a process connected to (test/bundles/aws-at-moto.ts records them). */
const AWS_HOSTS = Symbol.for('leaseq.test.awsHosts');

export function awsHostsSeen(): Set<string> {
  const global = globalThis as Record<symbol, Set<string> | undefined>;
  global[AWS_HOSTS] ??= new Set();
  return global[AWS_HOSTS];
}
