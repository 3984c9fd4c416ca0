// Starts a worker thread's module, `workerData.entry`. From the repository's sources the entry is
// TypeScript, which a thread cannot load without tsx's loader (a Worker's execArgv does not carry
// it under vitest), so the thread registers it first; the package's dist/ entry is JavaScript.
// Plain JavaScript, as the loader is not there yet when it runs.
import { workerData } from 'node:worker_threads';

if (workerData.entry.endsWith('.ts')) {
  const { register } = await import('tsx/esm/api');
  register();
}
await import(workerData.entry);
