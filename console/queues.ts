import type { ConsumerStats, QueueInfo, QueueStats } from '../client/types.js';
import { notice } from './api.js';
import { type Child, h, show, table } from './dom.js';
import { age, count, time } from './format.js';
import { href } from './nav.js';
import { every, type Page, REFRESH_MS } from './page.js';

/** The queue list: every queue the key has a scope on, with its figures, refreshed. */

const HEAD = ['Queue', 'Depth', 'In flight', 'Delayed', 'DLQ depth', 'Oldest unacked', 'Parked keys', ''];

export function queuesPage(main: HTMLElement, page: Page): void {
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading queues…'));
  const updated = h('span', { class: 'muted' });
  show(main, h('div', { class: 'title' }, h('h1', {}, 'Queues'), updated), body);
  every(page.signal, REFRESH_MS, async () => {
    try {
      const queues = await page.client.queues({ signal: page.signal });
      const rows = await Promise.all(queues.map((q) => rowsOf(q, page)));
      if (page.signal.aborted) return;
      show(
        body,
        queues.length
          ? table(HEAD, rows.flat(), { class: 'queues' })
          : h('p', { class: 'notice refused' }, 'This key has no scope on any queue.'),
      );
      updated.textContent = `updated ${time(new Date())}`;
    } catch (error) {
      if (!page.signal.aborted) show(body, notice(error, 'list the queues'));
    }
  });
}

/** A queue's row, and one per Lambda consumer under it; figures only where the key may see them. */
async function rowsOf(q: QueueInfo, page: Page): Promise<Child[][]> {
  const name = h(
    'a',
    { href: href({ queue: q.name, tab: 'dlq' }) },
    h('strong', {}, q.name),
    h('span', { class: 'muted' }, ` ${q.ordered ? 'ordered' : 'unordered'}, ${q.shards} shard(s)`),
  );
  if (!q.actions.includes('admin')) {
    return [
      [
        name,
        h(
          'td',
          { colspan: HEAD.length - 1, class: 'muted', 'data-refused': q.name },
          `This key may ${q.actions.join(' and ')} here; its figures need the scope admin:${q.name}.`,
        ),
      ],
    ];
  }
  try {
    const [stats, ...consumers] = await Promise.all([
      page.client.stats(q.name, { signal: page.signal }),
      ...q.consumers.map((consumer) => page.client.stats(q.name, { consumer, signal: page.signal })),
    ]);
    return [
      queueRow(name, stats as QueueStats),
      ...(consumers as ConsumerStats[]).map((c) => consumerRow(q, c)),
    ];
  } catch (error) {
    return [[name, h('td', { colspan: HEAD.length - 1 }, notice(error, `see the figures of ${q.name}`))]];
  }
}

function queueRow(name: Child, s: QueueStats): Child[] {
  return [
    name,
    h('span', { 'data-depth': '' }, count(s.depth)),
    count(s.in_flight),
    count(s.delayed),
    dlq(s.dlq_depth),
    age(s.oldest_unacked_age_seconds),
    count(s.parked_keys),
    s.paused ? h('span', { class: 'badge warn', title: s.paused.reason }, 'paused') : '',
  ];
}

/** A Lambda consumer has no depth or oldest unacked age (its backlog is its mapping's). */
function consumerRow(q: QueueInfo, s: ConsumerStats): Child[] {
  return [
    h(
      'a',
      { class: 'consumer', href: href({ queue: q.name, tab: 'dlq', consumer: s.consumer }) },
      `↳ ${s.consumer}`,
    ),
    h('span', { class: 'muted', title: 'taken by the consumer, not started' }, `${count(s.ready)} ready`),
    count(s.in_flight),
    count(s.delayed),
    dlq(s.dlq_depth),
    '—',
    count(s.parked_keys),
    h('span', { class: 'muted' }, 'Lambda consumer'),
  ];
}

const dlq = (n: number) => h('span', { class: n > 0 ? 'bad' : '' }, count(n));
