import { pathToFileURL } from 'node:url';
import { lambdaContext } from '../../infra/local/lambda-context.js';
import { awsHostsSeen } from './aws-hosts.js';

/**
 * A Lambda instance's runtime, in a child process of the test: it imports a module (a function's
 * bundle as deployed) and invokes its handler with the events the test sends over IPC, one at a
 * time, as Lambda invokes an instance. `call` runs any export of a test module in the same process.
 */

export type HostRequest =
  | {
      id: number;
      kind: 'invoke';
      module: string;
      handler: string;
      event: unknown;
      functionName: string;
      timeoutMs: number;
    }
  | { id: number; kind: 'call'; module: string; export: string; args: unknown[] }
  | { id: number; kind: 'value'; module: string; export: string }
  | { id: number; kind: 'hosts' };

export type HostAnswer =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: { name: string; message: string; stack?: string } };

const modules = new Map<string, Promise<Record<string, unknown>>>();
const load = (path: string) => {
  let loaded = modules.get(path);
  if (!loaded) {
    loaded = import(pathToFileURL(path).href) as Promise<Record<string, unknown>>;
    modules.set(path, loaded);
  }
  return loaded;
};

async function exported(path: string, name: string): Promise<unknown> {
  const module = await load(path);
  if (!(name in module)) throw new Error(`${path} exports no ${name}`);
  return module[name];
}

async function answer(request: HostRequest): Promise<unknown> {
  switch (request.kind) {
    case 'invoke': {
      const handler = (await exported(request.module, request.handler)) as (
        e: unknown,
        c: unknown,
      ) => unknown;
      return await handler(request.event, lambdaContext(request.functionName, request.timeoutMs));
    }
    case 'call': {
      const fn = (await exported(request.module, request.export)) as (...args: unknown[]) => unknown;
      return await fn(...request.args);
    }
    case 'value':
      return structuredClone(await exported(request.module, request.export));
    case 'hosts':
      return [...awsHostsSeen()].sort();
  }
}

// The test is gone (ended or killed): so is its instance, whatever sockets it keeps open.
process.on('disconnect', () => process.exit(0));

// One request at a time, as Lambda invokes an instance.
let running: Promise<unknown> = Promise.resolve();
process.on('message', (request: HostRequest) => {
  running = running
    .then(() => answer(request))
    .then(
      (value) => process.send?.({ id: request.id, ok: true, value } satisfies HostAnswer),
      (err: unknown) => {
        const e = err instanceof Error ? err : new Error(String(err));
        process.send?.({
          id: request.id,
          ok: false,
          error: { name: e.name, message: e.message, stack: e.stack },
        } satisfies HostAnswer);
      },
    );
});
