// `npm run build`: the package's dist/, JavaScript and declarations of what leaseq/client,
// leaseq/consumer, leaseq/cdk and the `leaseq` bin load (tsconfig.build.json). dist/ mirrors the
// repository's folders, so a module's URLs relative to itself hold in both; the files read that way
// at run time that tsc does not emit are copied into place. docs/packaging.md, "The package".
import { execFileSync } from 'node:child_process';
import { cpSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const at = (path) => `${root}${path}`;

rmSync(at('dist'), { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', at('tsconfig.build.json')], { stdio: 'inherit' });
// The local runtime's plain JavaScript (its threads' entries and the emulator thread's helpers), and
// the console's sources (bundled when first asked for).
for (const file of readdirSync(at('infra/local')).filter((f) => f.endsWith('.mjs')))
  cpSync(at(`infra/local/${file}`), at(`dist/infra/local/${file}`));
cpSync(at('console'), at('dist/console'), { recursive: true });
