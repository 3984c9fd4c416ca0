import type { TestRuntime } from './runtime.js';

/** Fires the runtime's sweep, one pass at a time, until the job at `path` ends; answers it. */
export async function runJob(t: TestRuntime, path: string) {
  for (let i = 0; i < 50; i++) {
    await t.runtime.sweep.fire();
    const job = (await t.api(path)).body;
    if (job.status !== 'running') return job;
  }
  throw new Error(`${path} still running after 50 passes`);
}
