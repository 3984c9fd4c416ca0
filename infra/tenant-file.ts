import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ConfigError, parseTenantConfig, type TenantConfig } from '../functions/core/config.js';
import { checkPayloadSchemas } from '../functions/core/payload-schema.js';
import { type ExceptionConfig, parseExceptions } from '../functions/core/tier-exceptions.js';
import { findingLine, tierFindings } from '../functions/core/tiers.js';

/**
 * Reads a tenant file for `npm start` and `cdk synth`: its JSON, with each queue's `"schema":
 * "<file>"` replaced by that file's JSON Schema (relative to the tenant file), so a team keeps its
 * schemas beside its tenant file and the functions get them inline. Errors name the file and,
 * for a schema, the queue (a ConfigError: `npm start` prints it in one line).
 */
export function loadTenantFile(path: string, shown = path): unknown {
  const raw = readJson(path, shown);
  const queues = (raw as { queues?: unknown })?.queues;
  if (!queues || typeof queues !== 'object') return raw;
  for (const [name, queue] of Object.entries(queues as Record<string, unknown>)) {
    const schema = (queue as { schema?: unknown } | null)?.schema;
    if (typeof schema !== 'string') continue;
    const file = resolve(dirname(path), schema);
    (queue as { schema: unknown }).schema = readJson(file, `${shown}: queues.${name}.schema (${schema})`);
  }
  return raw;
}

/** A tenant file as the stack and `npm start` read it: the config the functions get, and what only the stack reads. */
export interface TenantFile {
  config: TenantConfig;
  exceptions: ExceptionConfig[];
}

/** Validates a parsed tenant file (ConfigError naming `source`); its exceptions are parsed apart. */
export function parseTenantFile(raw: unknown, source: string): TenantFile {
  const { exceptions, ...rest } = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<
    string,
    unknown
  >;
  const config = parseTenantConfig(typeof raw === 'object' && raw !== null ? rest : raw, source);
  return { config, exceptions: parseExceptions(exceptions, config, source) };
}

/** The tenant file, parsed and checked as `npm start` and `leaseq start` need it (ConfigError naming `shown`). */
export function readTenant(path: string, shown = path): TenantFile {
  const file = parseTenantFile(loadTenantFile(path, shown), shown);
  checkPayloadSchemas(file.config, shown);
  return file;
}

/**
 * Synth's check of the tiers' standards (core/tiers.ts): a ConfigError with one line per finding.
 * `npm start` prints the same lines as warnings, and refuses them only with --strict.
 */
export function refuseTierFindings(file: TenantFile, source: string, now = Date.now()): void {
  const findings = tierFindings(file.config, file.exceptions, now);
  if (findings.length === 0) return;
  throw new ConfigError(
    `${source} is below its queues' tier standards:\n${findings.map((f) => `  ${findingLine(f)}`).join('\n')}`,
    findings.map((f) => ({ path: f.path, message: `${f.rule} (fix: ${f.fix})` })),
  );
}

function readJson(path: string, shown: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    throw new ConfigError(`${shown}: not found`, []);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    const message = (err as Error).message;
    throw new ConfigError(`${shown}${jsonErrorPlace(text, message)}: not valid JSON: ${message}`, []);
  }
}

/** `:line:column` of a JSON.parse error's "position N", or nothing when it does not say. */
export function jsonErrorPlace(text: string, message: string): string {
  const lineCol = /line (\d+) column (\d+)/.exec(message);
  if (lineCol) return `:${lineCol[1]}:${lineCol[2]}`;
  const pos = /position (\d+)/.exec(message);
  if (!pos) return '';
  const before = text.slice(0, Number(pos[1]));
  const line = before.split('\n').length;
  const column = Number(pos[1]) - before.lastIndexOf('\n');
  return `:${line}:${column}`;
}
