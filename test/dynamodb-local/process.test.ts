import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CreateTableCommand, DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { sleep } from '../../functions/core/async.js';
import { startDynamoDbLocal } from '../../infra/local/dynamodb-local.js';

/**
 * DynamoDB Local as a child process: its data stays in its folder across a restart, and no JVM
 * outlives the process that started it, also when that process is killed with SIGKILL.
 */

const dirs: string[] = [];
const folder = () => {
  const dir = mkdtempSync(join(tmpdir(), 'leaseq-ddb-local-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Pids of the JVMs serving `dir` (the guard's `sh` names the jar too, so match `java` itself). */
function javaOn(dir: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .flatMap((pid) => {
      try {
        const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return args[0]?.endsWith('java') && args.includes(dir) ? [Number(pid)] : [];
      } catch {
        return []; // gone meanwhile
      }
    });
}

const client = (url: string) =>
  new DynamoDBClient({
    region: 'us-east-1',
    endpoint: url,
    credentials: { accessKeyId: 'any', secretAccessKey: 'any' },
    maxAttempts: 1,
  });

describe('DynamoDB Local', () => {
  it('keeps its tables and items across a stop and a start on the same folder', async () => {
    const dir = folder();
    const first = await startDynamoDbLocal(dir);
    const before = client(first.url);
    await before.send(
      new CreateTableCommand({
        TableName: 'kept',
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      }),
    );
    await before.send(new PutItemCommand({ TableName: 'kept', Item: { pk: { S: 'a' }, n: { N: '1' } } }));
    before.destroy();
    await first.close();
    expect(javaOn(dir)).toEqual([]);

    const second = await startDynamoDbLocal(dir);
    const after = client(second.url);
    try {
      const got = await after.send(
        new GetItemCommand({ TableName: 'kept', Key: { pk: { S: 'a' } }, ConsistentRead: true }),
      );
      expect(got.Item?.n).toEqual({ N: '1' });
    } finally {
      after.destroy();
      await second.close();
    }
  }, 60_000);

  it('stops when the process that started it is killed with SIGKILL', async () => {
    const dir = folder();
    const starter = spawn(
      process.execPath,
      ['--import', 'tsx', resolve('test/fixtures/start-dynamodb-local.ts'), dir],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const url = await new Promise<string>((resolveUrl, reject) => {
      starter.stdout.once('data', (chunk: Buffer) => resolveUrl(chunk.toString().trim()));
      starter.once('exit', (code) => reject(new Error(`the starter exited (${code})`)));
    });
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(javaOn(dir)).toHaveLength(1);

    starter.kill('SIGKILL');
    const deadline = Date.now() + 10_000;
    while (javaOn(dir).length > 0 && Date.now() < deadline) await sleep(100);
    expect(javaOn(dir)).toEqual([]);
  }, 60_000);
});
