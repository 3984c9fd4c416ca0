import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { routes } from '../functions/api/app.js';
import { openApiDocument } from '../functions/api/openapi.js';

/**
 * docs/openapi.json, the HTTP API's contract as a file: `npm run openapi` writes it from the
 * routes and their zod schemas (functions/api/openapi.ts); a test fails when it is stale.
 */

export const OPENAPI_FILE = fileURLToPath(new URL('../docs/openapi.json', import.meta.url));

export function openApiText(): string {
  return `${JSON.stringify(openApiDocument(routes), null, 2)}\n`;
}

export function writtenOpenApi(): string {
  return readFileSync(OPENAPI_FILE, 'utf8');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(OPENAPI_FILE, openApiText());
  console.log(`wrote ${OPENAPI_FILE}`);
}
