import { run } from './program.js';

/** `leaseq` (bin/leaseq.mjs runs this file through tsx): see cli/program.ts. */

process.exitCode = await run(process.argv.slice(2));
