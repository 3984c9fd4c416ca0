import {
  LeaseqClient,
  type LeaseqClientOptions,
  Worker,
  type WorkerOptions,
  type WorkerPhase,
} from '../../client/index.js';
import type { TestRuntime } from '../helpers/runtime.js';

/** Shared pieces of the client tests: a client of the test runtime, and waiting helpers. */

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function clientOf(t: TestRuntime, options: Partial<LeaseqClientOptions> = {}): LeaseqClient {
  return new LeaseqClient({ baseUrl: t.runtime.url, apiKey: t.runtime.adminKey, ...options });
}

/** Waits until `check` holds, polling; fails with `what` when `timeoutMs` passes first. */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** An error a worker reported, with the phase and the message it came from. */
export interface Reported {
  phase: WorkerPhase;
  err: unknown;
  id: string | undefined;
}

/**
 * Workers a test file starts against its runtime, their errors collected instead of logged.
 * `stopAll` belongs in afterEach: a graceful stop lets each long poll end, so no worker leases
 * the next test's messages.
 */
export function workerPool(client: () => LeaseqClient) {
  const workers: Worker<unknown>[] = [];
  return {
    start<T = unknown>(options: Omit<WorkerOptions<T>, 'client' | 'onError'>) {
      const errors: Reported[] = [];
      const worker = new Worker<T>({
        client: client(),
        waitSeconds: 1,
        ...options,
        onError: (err, { phase, message }) => errors.push({ phase, err, id: message?.message_id }),
      });
      worker.start();
      workers.push(worker as Worker<unknown>);
      return { worker, errors };
    },
    stopAll: () => Promise.all(workers.splice(0).map((w) => w.stop({ timeoutMs: 3000 }))),
  };
}

export interface Exchange {
  method: string;
  path: string;
  // biome-ignore lint/suspicious/noExplicitAny: request bodies are inspected field by field.
  body: any;
  status: number;
}

/**
 * The global fetch, recording each exchange; `afterAnswer` runs once the answer is in, so
 * a test can change the runtime between a client's tries. The server is the real one.
 */
export function recordingFetch(afterAnswer: (exchanges: Exchange[]) => void = () => {}) {
  const exchanges: Exchange[] = [];
  const recording: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    exchanges.push({
      method: init?.method ?? 'GET',
      path: new URL(String(input)).pathname,
      body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined,
      status: res.status,
    });
    afterAnswer(exchanges);
    return res;
  };
  return { fetch: recording, exchanges };
}
