import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ConsumerConfig, TenantConfig } from '../functions/core/config.js';
import { declaredConsumer } from '../functions/lambda-consumer/middleware.js';

/**
 * The tenant's Lambda consumer modules, imported and checked as the local runtime runs them and
 * the stack bundles them: each `entry` (relative to the project root) must export `handler`, made
 * by leaseqConsumer() for the queue and consumer the file declares. `npm start` and `cdk synth`
 * both go through here, so a module one of them refuses the other refuses with the same message.
 */

export interface ConsumerModule {
  queue: string;
  consumer: ConsumerConfig;
  exported: unknown;
  /** Names it in messages: `consumer <name> of <queue> (<entry>)`. */
  where: string;
}

/** `root` is what LeaseqTenant's `projectRoot` is: the directory `npm start` or `cdk` runs in by default. */
export async function importConsumers(
  tenant: TenantConfig,
  root: string = process.cwd(),
): Promise<ConsumerModule[]> {
  const modules: ConsumerModule[] = [];
  for (const [queue, q] of Object.entries(tenant.queues)) {
    for (const c of q.consumers) {
      const where = `consumer ${c.name} of ${queue} (${c.entry})`;
      let module: Record<string, unknown>;
      try {
        module = await import(pathToFileURL(resolve(root, c.entry)).href);
      } catch (err) {
        throw new Error(`${where}: cannot import the module: ${(err as Error).message}`, { cause: err });
      }
      if (!(c.handler in module)) throw new Error(`${where}: the module has no export "${c.handler}"`);
      try {
        declaredConsumer(module[c.handler], { queue, consumer: c.name });
      } catch (err) {
        throw new Error(`${where}: ${(err as Error).message}`, { cause: err });
      }
      modules.push({ queue, consumer: c, exported: module[c.handler], where });
    }
  }
  return modules;
}
