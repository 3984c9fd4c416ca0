import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { buildSync } from 'esbuild';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO } from '../../bench/bundles.js';
import type { ConsoleAssetSource } from '../../functions/console/assets.js';
import { CONSOLE_CSP } from '../../functions/console/routes.js';
import { buildConsoleAssets, consoleAssetsDefine } from '../../infra/console-assets.js';
import { esbuildOptionsOf, runAfterBundling } from '../../infra/esbuild-options.js';
import { leaseqBundling } from '../../infra/leaseq-function.js';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { until } from '../helpers/until.js';

/**
 * The browser console (console/) served by a local runtime, driven by Debian's chromium through
 * Playwright: each page is used as a person would, and a screenshot of it is written to
 * test-output/console/ to be looked at.
 */

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = 'test-output/console';
/** Generous: the page refreshes its figures every 3 s, and this machine is shared. */
const SEEN = { timeout: 20_000 };

let t: TestRuntime;
let browser: Browser;
let page: Page;
/** What the page logged as an error (a CSP violation is one) or threw. */
const pageErrors: string[] = [];

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  [t, browser] = await Promise.all([
    startTestRuntime({
      tenant: 'console',
      queues: {
        jobs: { shards: 1 },
        dead: { shards: 1, max_attempts: 1 },
        ledger: { ordered: true, shards: 1, max_attempts: 1 },
        events: {
          shards: 1,
          max_attempts: 1,
          consumers: [{ name: 'billing', entry: 'test/fixtures/consumer-operations.ts', handler: 'billing' }],
        },
      },
    }),
    chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] }),
  ]);
  page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  page.on('console', (m) => {
    // The browser logs each refused call (the 401 of a revoked key) too: the page handled those.
    if (m.type() === 'error' && !/^Failed to load resource: .* status of 40[13]\b/.test(m.text()))
      pageErrors.push(m.text());
  });
  page.on('pageerror', (e) => pageErrors.push(e.message));
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

const shot = (name: string) => page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true });
const open = (hash: string) => page.goto(`${t.runtime.url}/console${hash}`);

async function signIn(key: string): Promise<void> {
  await open('#/');
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Open' }).click();
}

/** Dead-letters each message of `ids` on `queue` (max_attempts 1) with the error `error`. */
async function deadLetter(queue: string, messages: { message_id: string; key?: string }[], error: string) {
  const q = queueApi(t, queue);
  await q.produce(messages.map((m) => ({ ...m, payload: { order: m.message_id, total: 42 } })));
  const got = await q.receiveAll(messages.length, 15_000);
  for (const m of got) expect((await q.nack({ receipt: m.receipt, error })).status).toBe(200);
  return got;
}

describe('the console', () => {
  it('takes a pasted key and shows each queue, its depth moving after producing', async () => {
    await open('');
    await shot('key');
    await signIn(t.runtime.adminKey);
    const depth = page
      .locator('tr', { has: page.getByRole('link', { name: /^jobs/ }) })
      .locator('[data-depth]');
    await expect.poll(() => depth.textContent(), SEEN).toBe('0');
    expect(await page.evaluate("sessionStorage.getItem('leaseq.apiKey')")).toBe(t.runtime.adminKey);

    await queueApi(t, 'jobs').produce([1, 2, 3].map((n) => ({ payload: { n } })));
    await expect.poll(() => depth.textContent(), SEEN).toBe('3');
    // The Lambda consumer's own row, under its queue.
    await page.getByRole('link', { name: '↳ billing' }).waitFor(SEEN);
    await shot('queues');
  });

  it("plots a queue's last hour as the page samples it, kept over a reload", {
    timeout: 90_000,
  }, async () => {
    const jobs = queueApi(t, 'jobs');
    /** The samples the tab keeps for the queue's page. */
    const history = async () =>
      JSON.parse(
        (await page.evaluate<string | null>("sessionStorage.getItem('leaseq.history.jobs')")) ?? '[]',
      ) as Record<string, number>[];
    /** Waits for the page's next sample (it polls the stats every 3 s). */
    const nextSample = async () => {
      const n = (await history()).length;
      await expect.poll(async () => (await history()).length, SEEN).toBeGreaterThan(n);
    };
    const svg = (plot: string) => page.locator(`figure[data-plot="${plot}"] svg[role="img"]`);
    const label = (plot: string) => svg(plot).getAttribute('aria-label');

    await open('#/queues/jobs/trace');
    await expect.poll(async () => (await history()).length, SEEN).toBeGreaterThanOrEqual(2);
    // Something to draw: four produced, all seven received, one failed and received again, four
    // acked and three given back.
    await jobs.produce([4, 5, 6, 7].map((n) => ({ payload: { n } })));
    const got = await jobs.receiveAll(7, 15_000);
    expect(got).toHaveLength(7);
    await nextSample();
    const [first, ...rest] = got;
    expect((await jobs.nack({ receipt: first?.receipt, retry_after_seconds: 0 })).status).toBe(200);
    const again = await jobs.receiveAll(1, 15_000);
    expect(again.map((m) => [m.message_id, m.attempt])).toEqual([[first?.message_id, 2]]);
    await nextSample();
    await jobs.ack([...again, ...rest.slice(0, 3)].map((m) => m.receipt));
    for (const m of rest.slice(3))
      expect((await jobs.nack({ receipt: m.receipt, release: true })).status).toBe(200);
    await nextSample();
    await nextSample();

    // The latest values, in each plot's label, are the stats' figures (nothing moves now).
    const stats = await jobs.stats();
    expect(stats).toMatchObject({ depth: 3, in_flight: 0, dlq_depth: 0 });
    await expect.poll(() => label('depth'), SEEN).toContain('latest: ready 3, in flight 0');
    const depthCard = page.locator('.card', { has: page.locator('.label', { hasText: /^Depth$/ }) });
    expect(await depthCard.locator('.value').textContent()).toBe('3');
    expect(await label('dlq')).toContain('latest: dead letters 0');
    expect(await label('oldest')).toMatch(/latest: age \d+ (s|m \d+ s)$/);
    expect(await label('rates')).toMatch(
      /latest: produced [\d.]+\/s, acked [\d.]+\/s, redelivered [\d.]+\/s$/,
    );
    // The rates come from the counters' steps between samples: the samples saw all of it.
    const samples = await history();
    const moved = (field: string) => (samples.at(-1)?.[field] ?? 0) - (samples[0]?.[field] ?? 0);
    expect([moved('produced'), moved('acked'), moved('redelivered')]).toEqual([4, 4, 1]);
    // The acked line rose and fell: not flat.
    const acked = await page.locator('figure[data-plot="rates"] path.line').nth(1).getAttribute('d');
    const heights = new Set([...(acked ?? '').matchAll(/[ML][\d.]+ ([\d.]+)/g)].map((m) => m[1]));
    expect(heights.size).toBeGreaterThan(1);
    for (const plot of ['depth', 'oldest', 'rates', 'dlq']) expect(await svg(plot).count()).toBe(1);
    await shot('plots');

    // The tab keeps its samples over a reload.
    const kept = samples.length;
    await page.reload();
    await svg('depth').waitFor(SEEN);
    expect((await history()).length).toBeGreaterThanOrEqual(kept);

    // Keys park on ordered queues only: the tab shows there and nowhere else.
    const tools = page.getByRole('navigation', { name: 'Tools' });
    expect(await tools.getByRole('link').allTextContents()).not.toContain('Parked keys');
    await open('#/queues/ledger/trace');
    await tools.getByRole('link', { name: 'Parked keys' }).waitFor(SEEN);
  });

  it("opens a dead letter's history: attempts, errors, times and payload", async () => {
    await deadLetter(
      'dead',
      [{ message_id: 'order-1' }, { message_id: 'order-2' }, { message_id: 'order-3' }],
      'card declined',
    );
    await open('#/queues/dead/dlq');
    await page.locator('[data-message="order-2"]').click();
    await page.getByRole('heading', { name: 'Dead letter order-2' }).waitFor(SEEN);
    const attempts = page.locator('table.attempts tbody tr');
    await expect.poll(() => attempts.count()).toBe(1);
    expect(await attempts.first().textContent()).toContain('card declined');
    expect(JSON.parse((await page.locator('pre.payload').textContent()) ?? '')).toEqual({
      order: 'order-2',
      total: 42,
    });
    await shot('dead-letter');
    await open('#/queues/dead/dlq');
    await page.locator('table.dlq tbody tr').nth(2).waitFor(SEEN);
    // One bug, three letters: a group with a redrive of its own.
    const group = page.locator('table.dlq-groups tbody tr');
    await expect.poll(() => group.count()).toBe(1);
    expect(await group.first().textContent()).toMatch(/^3card declined/);
    await group.first().getByRole('button', { name: 'Redrive this group' }).waitFor(SEEN);
    await shot('dlq');
  });

  it('starts a filtered redrive and watches it finish', async () => {
    await open('#/queues/dead/redrive');
    // Keys park on ordered queues only: an unordered queue has no such tab.
    const tools = page.getByRole('navigation', { name: 'Tools' });
    await tools.getByRole('link', { name: 'Redrive' }).waitFor(SEEN);
    expect(await tools.getByRole('link').allTextContents()).toEqual([
      'Dead letters',
      'Trace',
      'Redrive',
      'Audit trail',
    ]);
    await page.getByLabel('Rate (messages a second)').fill('20');
    await page.getByLabel('Last error contains').fill('declined');
    // Counted before it starts: the three declined ones, and nothing moved.
    await page.getByRole('button', { name: 'Count matching' }).click();
    await page.getByText('3 dead letter(s) match this filter').waitFor(SEEN);
    expect((await queueApi(t, 'dead').dlq()).body.messages).toHaveLength(3);
    await shot('redrive-form');
    await page.getByRole('button', { name: 'Start redrive' }).click();
    await page.locator('[data-redrive-status="done"]').waitFor(SEEN);
    expect(await page.locator('[data-redrive-status]').textContent()).toContain('3 of 3 moved');
    await shot('redrive');
    expect((await queueApi(t, 'dead').dlq()).body.messages).toEqual([]);
  });

  it('traces a message by its id', async () => {
    await open('#/queues/dead/trace');
    await page.getByLabel('Message id').fill('order-1');
    await page.getByRole('button', { name: 'Trace' }).click();
    await page.locator('[data-state]').waitFor(SEEN);
    expect(await page.locator('table.events').textContent()).toContain('redriven');
    await shot('trace');
  });

  it('skips a parked key, a reason required, and the audit trail shows it', async () => {
    const [dead] = await deadLetter('ledger', [{ message_id: 'acct-1-a', key: 'acct-1' }], 'ledger locked');
    expect(dead?.message_id).toBe('acct-1-a');
    await queueApi(t, 'ledger').produce([{ message_id: 'acct-1-b', key: 'acct-1', payload: {} }]);
    await open('#/queues/ledger/parked');
    const skip = page.locator('form[data-skip="acct-1"]');
    await skip.waitFor(SEEN);
    await until(async () => (await t.api('/queues/ledger/keys/parked')).body.keys[0]?.held === 1);
    await open('#/queues/ledger/parked');
    await skip.waitFor(SEEN);
    await shot('parked');
    // Without a reason the browser refuses the form: nothing is sent.
    await skip.getByRole('button', { name: 'Skip' }).click();
    expect((await t.api('/queues/ledger/keys/parked')).body.keys).toHaveLength(1);
    await skip.getByRole('textbox').fill('ledger fixed by hand');
    await skip.getByRole('button', { name: 'Skip' }).click();
    await page.getByText('Skipped acct-1: 1 held message(s) let through.').waitFor(SEEN);
    expect((await t.api('/queues/ledger/keys/parked')).body.keys).toEqual([]);

    await page.getByRole('link', { name: 'Audit trail' }).click();
    const skipped = page.locator('table.audit tbody tr', { hasText: 'ledger fixed by hand' });
    await skipped.waitFor(SEEN);
    expect(await skipped.textContent()).toContain('local-admin');
    await shot('audit');
  });

  it("shows a Lambda consumer's own dead letters through the same pages", async () => {
    await queueApi(t, 'events').produce([{ message_id: 'evt-1', payload: { fatal: ['billing'] } }]);
    await until(async () => (await t.api('/queues/events/dlq?consumer=billing')).body.messages.length === 1);
    await open('#/queues/events/dlq?consumer=billing');
    await page.locator('[data-message="evt-1"]').waitFor(SEEN);
    await expect.poll(() => page.locator('.stats').textContent(), SEEN).toContain('Ready');
    await shot('consumer');
  });

  it('refuses a key without admin scope politely, and one revoked under it', async () => {
    const made = await t.api('/keys', { body: { name: 'producer', scopes: ['produce:jobs'] } });
    expect(made.status).toBe(201);
    const plotted = "Object.keys(sessionStorage).filter((k) => k.startsWith('leaseq.history.')).length";
    expect(await page.evaluate<number>(plotted)).toBeGreaterThan(0);
    await page.getByRole('button', { name: 'Forget key' }).click();
    // What the key saw goes with it.
    expect(await page.evaluate<number>(plotted)).toBe(0);
    await signIn(made.body.key);
    const refused = page.locator('[data-refused="jobs"]');
    await refused.waitFor(SEEN);
    expect(await refused.textContent()).toContain('need the scope admin:jobs');
    expect(await page.locator('table.queues tbody tr').count()).toBe(1);
    await shot('refused-list');

    await open('#/queues/jobs/dlq');
    const notice = page.locator('.notice.refused');
    await notice.waitFor(SEEN);
    expect(await notice.textContent()).toContain('may not administer jobs');
    await shot('refused-queue');

    // Revoked while the list is open: its next refresh says so instead of breaking.
    await open('#/');
    await refused.waitFor(SEEN);
    expect((await t.api('/keys/producer', { method: 'DELETE' })).status).toBe(204);
    await page.getByText('The API does not know this key').waitFor(SEEN);
    await shot('revoked');
  });

  it('ran without a script error or a CSP violation', () => {
    expect(pageErrors).toEqual([]);
  });
});

describe("the console's files", () => {
  it('are served with their types, no-cache and a CSP without inline script or other hosts', async () => {
    for (const [path, type] of [
      ['/console', 'text/html'],
      ['/console/app.js', 'text/javascript'],
      ['/console/app.css', 'text/css'],
    ] as const) {
      const res = await fetch(`${t.runtime.url}${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain(type);
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp).toBe(CONSOLE_CSP);
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe-');
      expect(csp).not.toMatch(/https?:/);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      await res.arrayBuffer();
    }
  });

  it('are at most 100 KB gzipped in all, with no inline script and no other host', () => {
    const assets = buildConsoleAssets();
    const gzipped = Object.values(assets).reduce((n, text) => n + gzipSync(text).byteLength, 0);
    expect(gzipped).toBeLessThanOrEqual(100 * 1024);
    expect(assets.html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    // The SVG namespace of the plots is a name, never fetched.
    for (const text of Object.values(assets))
      expect(text.replaceAll('http://www.w3.org/2000/svg', '')).not.toMatch(/https?:\/\//);
  });
});

describe("the api bundle's console", () => {
  it('is what a bundle built with the stack’s bundling serves, from the file beside it, with no build at run time', async () => {
    const assets = buildConsoleAssets();
    const bundling = leaseqBundling(consoleAssetsDefine(assets));
    const dir = mkdtempSync(join(tmpdir(), 'leaseq-console-bundle-'));
    try {
      buildSync({
        ...esbuildOptionsOf(bundling, 'test/fixtures/console-probe.ts', dir),
        absWorkingDir: REPO,
        logLevel: 'error',
      });
      runAfterBundling(bundling, REPO, dir);
      // The main file carries none of it: an instance parses the assets at the console's first request.
      expect(readFileSync(join(dir, 'index.mjs'), 'utf8')).not.toContain(assets.css);
      const bundled = (await import(pathToFileURL(join(dir, 'index.mjs')).href)) as {
        handler: ConsoleAssetSource;
      };
      expect(await bundled.handler()).toEqual(assets);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
