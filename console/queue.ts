import type { ConsumerStats, QueueInfo, QueueStats } from '../client/types.js';
import { notice } from './api.js';
import { auditTab } from './audit.js';
import { dlqTab } from './dlq.js';
import { type Child, h, show } from './dom.js';
import { age, count, perSecond } from './format.js';
import { keep, rates, type Sample, sampleOf, values } from './history.js';
import { consumerScope, href, type QueueView, TABS, type Tab } from './nav.js';
import { every, type Page, REFRESH_MS } from './page.js';
import { parkedTab } from './parked.js';
import { plotFigure } from './plot.js';
import { ageMax, type Plot } from './plot-scale.js';
import { redriveTab } from './redrive.js';
import { historyKey, loadHistory, saveHistory } from './session.js';
import { traceTab } from './trace.js';

/** A queue's page (or one Lambda consumer's state of it): its figures, then one tool per tab. */

export interface QueuePage extends Page {
  view: QueueView;
  queue: QueueInfo;
  /** Goes to another view of this queue (a tab, a dead letter, a redrive). */
  go(view: Partial<QueueView>): void;
}

const TAB_BODIES: Record<Tab, (el: HTMLElement, page: QueuePage) => void> = {
  dlq: dlqTab,
  trace: traceTab,
  redrive: redriveTab,
  parked: parkedTab,
  audit: auditTab,
};

export async function queuePage(main: HTMLElement, page: Page, view: QueueView): Promise<void> {
  const crumbs = h('p', { class: 'crumbs' }, h('a', { href: '#/' }, 'Queues'), ` / ${view.queue}`);
  let queue: QueueInfo | undefined;
  try {
    queue = (await page.client.queues({ signal: page.signal })).find((q) => q.name === view.queue);
  } catch (error) {
    show(main, crumbs, notice(error, 'list the queues'));
    return;
  }
  if (page.signal.aborted) return;
  if (!queue?.actions.includes('admin')) {
    const may = queue ? ` It may ${queue.actions.join(' and ')} there.` : '';
    show(
      main,
      crumbs,
      h(
        'p',
        { class: 'notice refused', role: 'status' },
        `This key may not administer ${view.queue}: its tools need the scope admin:${view.queue} (or admin:*).${may}`,
      ),
    );
    return;
  }
  const scope = consumerScope(view);
  const stats = h('div', { class: 'stats' });
  // The last hour, sampled from the figures this page polls (docs/operations.md, "Console").
  const key = historyKey(view.queue, view.consumer);
  let samples = loadHistory(key);
  const grid = h('div', { class: 'plot-grid' }, ...plotsOf(samples, view.consumer !== undefined));
  const plots = h(
    'section',
    { class: 'plots', 'aria-label': 'The last hour' },
    h(
      'p',
      { class: 'muted' },
      `The last hour, as this page sampled it every ${REFRESH_MS / 1000} s while open in this tab.`,
    ),
    grid,
  );
  const body = h('section', { class: 'tab' });
  show(
    main,
    crumbs,
    h(
      'div',
      { class: 'title' },
      h(
        'h1',
        {},
        view.queue,
        view.consumer ? h('span', { class: 'muted' }, ` · consumer ${view.consumer}`) : '',
      ),
      h('span', { class: 'muted' }, queue.ordered ? 'ordered' : 'unordered'),
    ),
    queue.consumers.length
      ? h(
          'nav',
          { class: 'states', 'aria-label': 'State' },
          'State of: ',
          ...[undefined, ...queue.consumers].map((c) =>
            h(
              'a',
              {
                href: href({ queue: view.queue, tab: view.tab, ...(c ? { consumer: c } : {}) }),
                class: c === view.consumer ? 'on' : '',
              },
              c ?? 'the queue',
            ),
          ),
        )
      : '',
    stats,
    plots,
    h(
      'nav',
      { class: 'tabs', 'aria-label': 'Tools' },
      // Keys park on ordered queues only.
      ...Object.entries(TABS)
        .filter(([tab]) => tab !== 'parked' || queue.ordered)
        .map(([tab, label]) =>
          h(
            'a',
            {
              href: href({ queue: view.queue, tab: tab as Tab, ...scope }),
              class: tab === view.tab ? 'on' : '',
            },
            label,
          ),
        ),
    ),
    body,
  );
  every(page.signal, REFRESH_MS, async () => {
    try {
      const figures = await page.client.stats(view.queue, { ...scope, signal: page.signal });
      if (page.signal.aborted) return;
      samples = keep(samples, sampleOf(figures, Date.now()));
      saveHistory(key, samples);
      show(stats, ...cards(figures, queue.ordered));
      show(grid, ...plotsOf(samples, view.consumer !== undefined));
    } catch (error) {
      if (!page.signal.aborted) show(stats, notice(error, `see the figures of ${view.queue}`));
    }
  });
  const go = (v: Partial<QueueView>) => {
    location.hash = href({ ...view, id: undefined, ...v });
  };
  TAB_BODIES[view.tab](body, { ...page, view, queue, go });
}

/** The figures as cards; held and parked keys only where they can be (ordered queues). */
function cards(s: QueueStats | ConsumerStats, ordered: boolean): Child[] {
  const card = (label: string, value: string, tone = '') =>
    h(
      'div',
      { class: `card ${tone}` },
      h('span', { class: 'label' }, label),
      h('span', { class: 'value' }, value),
    );
  const common = [
    card('In flight', count(s.in_flight)),
    card('Delayed', count(s.delayed)),
    ...(ordered
      ? [
          card('Held', count(s.held)),
          card('Parked keys', count(s.parked_keys), s.parked_keys > 0 ? 'tone-warn' : ''),
        ]
      : []),
    card('DLQ depth', count(s.dlq_depth), s.dlq_depth > 0 ? 'tone-bad' : ''),
    card('Oldest dead letter', s.dlq_depth > 0 ? age(s.dlq_oldest_age_seconds) : '—'),
  ];
  if ('consumer' in s) return [card('Ready', count(s.ready)), ...common];
  return [
    card('Depth', count(s.depth)),
    ...common,
    card('Oldest unacked', age(s.oldest_unacked_age_seconds)),
    ...(s.paused ? [card('Paused', s.paused.reason, 'tone-warn')] : []),
  ];
}

/** The plots of the samples: a Lambda consumer's have no age, and its rates are its failures. */
function plotsOf(samples: Sample[], consumer: boolean): HTMLElement[] {
  const depth: Plot = {
    title: 'Depth',
    format: count,
    series: [
      { name: 'ready', tone: 'tone-accent', points: values(samples, (s) => s.ready) },
      { name: 'in flight', tone: 'tone-alt', points: values(samples, (s) => s.in_flight) },
    ],
  };
  const oldest: Plot = {
    title: 'Oldest unacked',
    format: age,
    top: ageMax,
    series: [{ name: 'age', tone: 'tone-warn', points: values(samples, (s) => s.oldest) }],
  };
  const rate = (name: string, tone: string, pick: (s: Sample) => number | undefined) => ({
    name,
    tone,
    points: rates(samples, pick),
  });
  const flow: Plot = {
    title: 'Messages a second',
    format: perSecond,
    series: consumer
      ? [
          rate('nacked', 'tone-warn', (s) => s.nacked),
          rate('dead-lettered', 'tone-bad', (s) => s.dead_lettered),
        ]
      : [
          rate('produced', 'tone-accent', (s) => s.produced),
          rate('acked', 'tone-ok', (s) => s.acked),
          rate('redelivered', 'tone-warn', (s) => s.redelivered),
        ],
  };
  const dlq: Plot = {
    title: 'DLQ depth',
    format: count,
    series: [{ name: 'dead letters', tone: 'tone-bad', points: values(samples, (s) => s.dlq) }],
  };
  return [
    plotFigure(depth, { 'data-plot': 'depth' }),
    ...(consumer ? [] : [plotFigure(oldest, { 'data-plot': 'oldest' })]),
    plotFigure(flow, { 'data-plot': 'rates' }),
    plotFigure(dlq, { 'data-plot': 'dlq' }),
  ];
}
