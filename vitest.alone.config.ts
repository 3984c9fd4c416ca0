import { configDefaults, defineConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * `npm test` runs these after the rest, one at a time: files that load the whole machine (packing
 * and compiling the package, a browser), and the one that bounds produce → receive at 250 ms,
 * which any busy neighbour on two cores stretches past it (a browser's start to 1 s, the command
 * line's tests to 300 ms); and the reshard under load, which would be that busy neighbour.
 */
const ALONE = [
  'test/package/**/*.test.ts',
  'test/console/**/*.test.ts',
  'test/integration/fast-admission.test.ts',
  'test/integration/reshard-load.test.ts',
];

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ALONE,
    exclude: configDefaults.exclude,
    poolOptions: { forks: { maxForks: 1, minForks: 1 } },
  },
});
