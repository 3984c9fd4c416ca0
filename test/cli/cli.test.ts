import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alarmsTable } from '../../cli/commands/alarms.js';
import { BENCH_FIGURES } from '../../cli/sizing.js';
import { createSweepHandler } from '../../functions/sweep/app.js';
import { lambdaContext } from '../../infra/local/lambda-context.js';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { until } from '../helpers/until.js';

/** The real `leaseq` binary (node bin/leaseq.mjs) against a local runtime of its own. */

const BIN = resolve('bin/leaseq.mjs');

let t: TestRuntime;
let scratch: string;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'cli',
    queues: {
      jobs: { shards: 1 },
      dead: { shards: 1, max_attempts: 1 },
      ledger: { ordered: true, shards: 1, max_attempts: 1 },
    },
  });
  scratch = mkdtempSync(join(tmpdir(), 'leaseq-cli-'));
});
afterAll(async () => {
  await t?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the binary asynchronously (the runtime shares this process's event loop). */
function leaseq(
  args: string[],
  options: { stdin?: string; env?: Record<string, string> } = {},
): Promise<Run> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: scratch,
      env: { ...process.env, LEASEQ_URL: t.runtime.url, LEASEQ_KEY: t.runtime.adminKey, ...options.env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
    child.stdin.end(options.stdin ?? '');
  });
}

const lines = (text: string) => text.split('\n').filter((l) => l !== '');

// Each call starts a process that loads TypeScript through tsx (~1.3 s idle, several times that
// on a loaded machine), and a test makes a dozen: past vitest's 30 s there.
describe('leaseq against a local runtime', { timeout: 90_000 }, () => {
  it('send → receive → ack, in JSON', async () => {
    const sent = await leaseq(['send', 'jobs', '{"n":1}', '--id', 'cli-1', '--json']);
    expect(sent.stderr).toBe('');
    expect(sent.code).toBe(0);
    expect(JSON.parse(sent.stdout).results).toEqual([{ message_id: 'cli-1', status: 'accepted' }]);

    // Two more from stdin lines, one per line.
    const fromStdin = await leaseq(['send', 'jobs', '--json'], { stdin: '{"n":2}\n{"n":3}\n' });
    expect(fromStdin.code).toBe(0);
    expect(JSON.parse(fromStdin.stdout).results.map((r: { status: string }) => r.status)).toEqual([
      'accepted',
      'accepted',
    ]);

    const got = await leaseq(['receive', 'jobs', '--max', '10', '--wait', '5', '--json']);
    expect(got.code).toBe(0);
    const messages = JSON.parse(got.stdout).messages as {
      message_id: string;
      payload: unknown;
      receipt: string;
    }[];
    expect(messages.length).toBeGreaterThan(0);
    const first = messages.find((m) => m.message_id === 'cli-1');
    expect(first?.payload).toEqual({ n: 1 });

    const acked = await leaseq(['ack', 'jobs', ...messages.map((m) => m.receipt), '--json']);
    expect(acked.code).toBe(0);
    expect(JSON.parse(acked.stdout).results.every((r: { status: string }) => r.status === 'acked')).toBe(
      true,
    );

    // What is left, received and acked in one go, as a table.
    const rest = await leaseq(['receive', 'jobs', '--ack', '--wait', '2']);
    expect(rest.code).toBe(0);
    const stats = await leaseq(['stats', 'jobs', '--json']);
    expect(stats.code).toBe(0);
    const s = JSON.parse(stats.stdout);
    expect(s.acked_total + (s.depth ?? 0) + s.in_flight).toBeGreaterThanOrEqual(3);
  });

  it('redrive --follow reaches 100 %', async () => {
    const ids = ['d-1', 'd-2', 'd-3'];
    await t.api('/queues/dead/messages', {
      body: { messages: ids.map((id) => ({ message_id: id, payload: id })) },
    });
    const received: { receipt: string }[] = [];
    const deadline = Date.now() + 15_000;
    while (received.length < ids.length && Date.now() < deadline) {
      const res = await t.api('/queues/dead/receive', { body: { max_messages: 10, wait_seconds: 1 } });
      received.push(...res.body.messages);
    }
    for (const m of received) {
      await t.api('/queues/dead/nack', { body: { receipt: m.receipt, retryable: false, error: 'boom' } });
    }

    const ls = await leaseq(['dlq', 'ls', 'dead', '--json']);
    expect(ls.code).toBe(0);
    expect(
      JSON.parse(ls.stdout)
        .messages.map((m: { message_id: string }) => m.message_id)
        .sort(),
    ).toEqual(ids);
    const show = await leaseq(['dlq', 'show', 'dead', 'd-1']);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain('non_retryable');
    expect(show.stdout).toContain('boom');

    const errors = await leaseq(['dlq', 'errors', 'dead', '--json']);
    expect(
      JSON.parse(errors.stdout).groups.map((g: { error: string; count: number }) => [g.error, g.count]),
    ).toEqual([['boom', 3]]);
    const counted = await leaseq(['redrive', 'dead', '--ids', 'd-1,d-2,other', '--count']);
    expect(counted).toMatchObject({ code: 0, stdout: '2 dead letter(s) match\n', stderr: '' });

    const redrive = await leaseq(['redrive', 'dead', '--rate', '100', '--follow']);
    expect(redrive.stderr).toBe('');
    expect(redrive.code).toBe(0);
    const last = lines(redrive.stdout).at(-1) ?? '';
    expect(last).toMatch(/: done, moved 3, 0 left \(100 %\)$/);

    const stats = await leaseq(['stats', 'dead', '--json']);
    expect(JSON.parse(stats.stdout).dlq_depth).toBe(0);
    const audit = await leaseq(['audit', 'dead', '--json']);
    expect(
      JSON.parse(audit.stdout).entries.some((e: { action: string }) => e.action.includes('redrive')),
    ).toBe(true);
  });

  it('trace and keys', async () => {
    const trace = await leaseq(['trace', 'dead', 'd-1']);
    expect(trace.code).toBe(0);
    expect(trace.stdout).toContain('message_id');
    expect(trace.stdout).toMatch(/dead|redriv/);

    const made = await leaseq(['keys', 'create', 'cli-reader', '--scope', 'consume:jobs', '--json']);
    expect(made.code).toBe(0);
    const key = JSON.parse(made.stdout).key as string;
    const listed = await leaseq(['keys', 'ls', '--json']);
    expect(JSON.parse(listed.stdout).keys.map((k: { name: string }) => k.name)).toContain('cli-reader');
    // The new key may receive but not read stats: the service's FORBIDDEN, exit 1.
    const forbidden = await leaseq(['stats', 'jobs', '--key', key]);
    expect(forbidden.code).toBe(1);
    expect(forbidden.stderr).toMatch(/^leaseq: FORBIDDEN: /);
    expect((await leaseq(['keys', 'revoke', 'cli-reader'])).code).toBe(0);
  });

  it('parked ls and skip on an ordered queue', async () => {
    await t.api('/queues/ledger/messages', {
      body: { messages: [1, 2].map((n) => ({ message_id: `l-${n}`, key: 'acct-1', payload: n })) },
    });
    let first: { receipt: string } | undefined;
    for (let i = 0; i < 15 && !first; i++) {
      first = (await t.api('/queues/ledger/receive', { body: { max_messages: 1, wait_seconds: 1 } })).body
        .messages[0];
    }
    await t.api('/queues/ledger/nack', { body: { receipt: first?.receipt, retryable: false, error: 'bad' } });

    const parked = await leaseq(['parked', 'ls', 'ledger', '--json']);
    expect(parked.code).toBe(0);
    expect(JSON.parse(parked.stdout).keys).toMatchObject([{ key: 'acct-1', dead_message_id: 'l-1' }]);
    const noReason = await leaseq(['skip', 'ledger', 'acct-1']);
    expect(noReason.code).toBe(2);
    const skipped = await leaseq(['skip', 'ledger', 'acct-1', '--reason', 'replaced by hand', '--json']);
    expect(skipped.code).toBe(0);
    expect(JSON.parse(skipped.stdout).key).toBe('acct-1');
    const after = await leaseq(['parked', 'ls', 'ledger']);
    expect(after.stdout.trim()).toBe('no parked keys');
  });

  it('pause and resume a queue, each in the audit trail', async () => {
    const paused = await leaseq(['pause', 'jobs', '--reason', 'incident 42', '--json']);
    expect(paused.code, paused.stderr).toBe(0);
    expect(JSON.parse(paused.stdout).paused).toMatchObject({ reason: 'incident 42' });
    expect((await queueApi(t, 'jobs').stats()).paused).toMatchObject({ reason: 'incident 42' });
    const resumed = await leaseq(['resume', 'jobs', '--reason', 'fixed']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/^jobs resumed/);
    expect((await queueApi(t, 'jobs').stats()).paused).toBeNull();
    const audit = JSON.parse((await leaseq(['audit', 'jobs', '--json'])).stdout).entries;
    expect(audit.slice(0, 2).map((e: { action: string; reason?: string }) => [e.action, e.reason])).toEqual([
      ['resume', 'fixed'],
      ['pause', 'incident 42'],
    ]);
    const again = await leaseq(['resume', 'jobs']);
    expect(again.code).toBe(1);
    expect(lines(again.stderr)).toHaveLength(1);
    const missing = await leaseq(['pause', 'jobs']);
    expect(missing.code).toBe(2);
  });

  it('a wrong key exits 1 with exactly one line on stderr', async () => {
    const run = await leaseq(['stats', 'jobs', '--key', 'not-a-key-0123456789']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(lines(run.stderr)).toHaveLength(1);
    expect(run.stderr).toMatch(/^leaseq: UNAUTHENTICATED: /);

    const json = await leaseq(['stats', 'jobs', '--key', 'not-a-key-0123456789', '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stderr).error.code).toBe('UNAUTHENTICATED');
  });

  it('leaseq size: the figures of the hand calculation, as JSON', async () => {
    const run = await leaseq(['size', '--rate', '200000', '--bytes', '2048', '--json']);
    expect(run.code).toBe(0);
    const r = JSON.parse(run.stdout);
    // (2048 + 300) × 200,000 B/s / 1 MiB/s = 447.85 → 448 for bytes; 200 for records; × 1.2 → 538.
    expect(r.kinesis).toMatchObject({
      shardsForBytes: 448,
      shardsForRecords: 200,
      binding: 'bytes',
      shards: 538,
    });
    // 200,000 × the bench's units a message (bench/figures.json: 1.42 WRU and 2.00 RRU when written).
    const f = BENCH_FIGURES;
    expect(r.figures).toEqual(f);
    expect(r.dynamodb.writeUnitsPerSecond).toBeCloseTo(200_000 * f.writeUnitsPerMessage, 3);
    expect(r.dynamodb.readUnitsPerSecond).toBeCloseTo(200_000 * f.readUnitsPerMessage, 3);
    // 525.6 billion messages a month × their DynamoDB units ($1.1375 per million at 1.42 and 2.00).
    expect(r.monthlyUsd.dynamodb).toBeCloseTo(
      525_600 * (f.writeUnitsPerMessage * 0.625 + f.readUnitsPerMessage * 0.125),
      0,
    );
    // Both stream modes, and the cheaper by the Kinesis lines alone.
    expect(r.monthlyUsd.kinesisOnDemand.total).toBeGreaterThan(0);
    expect(r.cheaper.mode).toBe('provisioned');
    const text = await leaseq(['size', '--rate', '200000', '--bytes', '2048']);
    expect(text.stdout).toContain('binding limit');
    expect(text.stdout).toMatch(/shards\s+│ 538/);
  });

  it('leaseq size --peak: capacity for the peak, the month at the rate, on-demand beside provisioned', async () => {
    const run = await leaseq(['size', '--rate', '50', '--peak', '2000', '--bytes', '1024']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(lines(run.stdout)[0]).toBe('50 msg/s sustained, 2,000 at the peak, of 1,024 B, 24 h retention');
    // 2,000 × 1,324 B = 2.53 MiB/s → 3 shards for bytes, × 1.2 → 4.
    expect(run.stdout).toMatch(/shards\s+│ 4 \(the peak with 20 % headroom\)/);
    // 131.4 M messages of 2 KB billed: $29.20 a stream, $20.05 in, $20.05 out (read twice).
    expect(run.stdout).toMatch(/\$\/month Kinesis on-demand\s+│ \$69\.30 instead of the three above/);
    expect(run.stdout).toMatch(/\$\/month total, on-demand\s+│ \$/);
    // 4 shards ($43.80) and PUT units ($1.84) against $69.30.
    expect(run.stdout).toMatch(/cheaper\s+│ provisioned stream, by \$23\.66 a month/);
    expect(run.stdout).toContain(`per-message figures: bench run ${BENCH_FIGURES.run} (`);
    expect(run.stdout).toContain('note: capacity is sized for the peak of 2,000 msg/s');

    const low = await leaseq(['size', '--rate', '50', '--peak', '20', '--bytes', '1024']);
    expect(low.code).toBe(2);
    expect(lines(low.stderr)).toEqual([
      'leaseq: --peak 20 is below --rate 50: the peak is the busiest rate, at least the sustained one',
    ]);
  });

  it("leaseq alarms: the API's answer with --json, one line when nothing is above its threshold", async () => {
    // The parked key of an earlier test may have fired `parked-keys` on a gauge pass before its
    // skip: it clears at the next one.
    let json: Run = { code: null, stdout: '', stderr: '' };
    await until(async () => {
      json = await leaseq(['alarms', '--json']);
      return json.code !== 0 || JSON.parse(json.stdout).alarms.length === 0;
    }, 75_000);
    expect([json.code, json.stderr]).toEqual([0, '']);
    expect(JSON.parse(json.stdout)).toEqual({ alarms: [] });
    const text = await leaseq(['alarms']);
    expect([text.code, text.stdout.trim()]).toEqual([0, 'No alarm is above its threshold.']);
  });

  it('leaseq alarms: a row per alarm, its queue, kind and state', () => {
    const row = alarmsTable({
      alarms: [
        {
          name: 'leaseq-cli/jobs/dlq-oldest-age',
          queue: 'jobs',
          kind: 'dlq-oldest-age',
          state: 'ALARM',
          since: '2026-12-06T12:00:00.000Z',
          pages: true,
          description: 'For the consuming team: …',
        },
      ],
    });
    expect(row).toContain('│ jobs  │ dlq-oldest-age │ ALARM │ 2026-12-06T12:00:00.000Z │ yes   │');
  });

  it('leaseq usage: a table of each queue and the total by default, the API’s answer with --json', async () => {
    await t.api('/queues/jobs/messages', { body: { messages: [{ message_id: 'u-1', payload: 'usage' }] } });
    await t.api('/queues/jobs/stats'); // writes the api's pending counts
    const sweep = createSweepHandler(
      t.runtime.config,
      t.runtime.clients,
      { gaugeIntervalMs: 0, passIntervalMs: 0, reserveMs: 0 },
      new Logger({ logLevel: 'SILENT' }),
    );
    await sweep({}, lambdaContext('sweep', 1));
    const range = [
      '--from',
      new Date(Date.now() - 3_600_000).toISOString(),
      '--to',
      new Date().toISOString(),
    ];

    const json = await leaseq(['usage', ...range, '--json']);
    expect(json.stderr).toBe('');
    expect(json.code).toBe(0);
    const usage = JSON.parse(json.stdout);
    const [, from, , to] = range;
    expect(usage).toEqual((await t.api(`/usage?from=${from}&to=${to}`)).body);
    const jobs = usage.queues.find((q: { queue: string }) => q.queue === 'jobs');
    expect(jobs.produced.messages).toBeGreaterThanOrEqual(1);

    const shown = await leaseq(['usage', ...range, '--queue', 'jobs']);
    expect(shown.code).toBe(0);
    const rows = lines(shown.stdout);
    expect(rows.find((l) => l.includes('produced') && l.includes('GB-h'))).toBeDefined();
    const jobsRow = rows.find((l) => /│ jobs /.test(l) && l.includes('$'));
    expect(jobsRow?.split('│').map((c) => c.trim())[2]).toBe(String(jobs.produced.messages));
    expect(rows.some((l) => /│ total /.test(l))).toBe(true);
    expect(rows.at(-1)).toContain('estimated: stored_gb_hours, cost_usd');

    const reversed = await leaseq(['usage', '--from', to as string, '--to', from as string]);
    expect(reversed.code).toBe(1);
    expect(lines(reversed.stderr)).toHaveLength(1);
    expect(reversed.stderr).toContain('INVALID_RANGE');
  });

  it('leaseq reshard: a local stream split live, the AWS steps named, and its mistakes one line each', async () => {
    const tenantFile = join(scratch, 'reshard-tenant.json');
    writeFileSync(
      tenantFile,
      JSON.stringify({
        tenant: 'cli',
        queues: {
          jobs: { shards: 1 },
          dead: { shards: 1, max_attempts: 1 },
          ledger: { ordered: true, shards: 1 },
        },
      }),
    );
    const common = ['--config', tenantFile, '--data-dir', t.dataDir];
    const split = await leaseq(['reshard', 'jobs', '4', ...common, '--json']);
    expect(split.code, split.stderr).toBe(0);
    const answer = JSON.parse(split.stdout);
    expect(answer).toMatchObject({ stream: 'leaseq-cli-jobs', before: 1, after: 4, aws_steps: [2, 4] });
    expect(answer.steps.map((s: { kind: string }) => s.kind)).toEqual(['split', 'split', 'split']);
    // The queue's stats show the stream as it is now once the api lists it again (every 10 s at
    // most): four open shards, the first closed.
    const open = async () =>
      (await queueApi(t, 'jobs').stats()).shards.filter((s: { state: string }) => s.state === 'open').length;
    await until(async () => (await open()) === 4, 20_000);

    const text = await leaseq(['reshard', 'jobs', '2', ...common]);
    expect(text.code, text.stderr).toBe(0);
    expect(lines(text.stdout)[0]).toBe('leaseq-cli-jobs: 4 → 2 open shards in 2 steps');
    expect(text.stdout).toContain('On AWS: change the file and deploy, one deploy (4 → 2)');

    const unknown = await leaseq(['reshard', 'nope', '2', ...common]);
    expect(unknown.code).toBe(2);
    expect(lines(unknown.stderr)).toEqual([
      'leaseq: nope: no queue or stream of that name in the tenant file (streams: leaseq-cli-jobs, leaseq-cli-dead, leaseq-cli-ledger)',
    ]);
    const noRuntime = await leaseq(['reshard', 'jobs', '2', '--config', tenantFile, '--data-dir', scratch]);
    expect(noRuntime.code).toBe(2);
    expect(lines(noRuntime.stderr)).toHaveLength(1);
    expect(noRuntime.stderr).toContain('no local runtime in');
  });

  it('usage mistakes exit 2 with one line and no stack trace', async () => {
    const bogus = await leaseq(['start', '--bogus']);
    expect(bogus.code).toBe(2);
    expect(lines(bogus.stderr)).toEqual(["leaseq: unknown option '--bogus'"]);

    const broken = join(scratch, 'broken.json');
    writeFileSync(broken, '{\n  "tenant": "x",\n  "queues": {,}\n}\n');
    const badFile = await leaseq(['start', '--config', broken]);
    expect(badFile.code).toBe(2);
    expect(lines(badFile.stderr)).toHaveLength(1);
    expect(badFile.stderr).toContain(`${broken}:3:`);
    expect(badFile.stderr).not.toMatch(/\n\s+at /);

    const invalid = join(scratch, 'invalid.json');
    writeFileSync(invalid, JSON.stringify({ tenant: 'x', queues: { q: { shards: 'many' } } }));
    const badConfig = await leaseq(['start', '--config', invalid]);
    expect(badConfig.code).toBe(2);
    expect(lines(badConfig.stderr)).toHaveLength(1);
    expect(badConfig.stderr).toContain('queues.q.shards');

    const noRate = await leaseq(['size', '--bytes', '10']);
    expect(noRate.code).toBe(2);
    expect(lines(noRate.stderr)).toHaveLength(1);
  });
});
