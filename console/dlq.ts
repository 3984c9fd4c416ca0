import type { DeadLetter, DeadLetterGroups, FailedAttempt } from '../client/types.js';
import { notice } from './api.js';
import { h, show, table } from './dom.js';
import { pretty, time } from './format.js';
import { consumerScope, href } from './nav.js';
import type { QueuePage } from './queue.js';

/** The dead letters, oldest first, a page at a time; with an id, that one's whole history. */

const PAGE_SIZE = 50;

export function dlqTab(el: HTMLElement, page: QueuePage): void {
  if (page.view.id) void deadLetter(el, page, page.view.id);
  else void deadLetters(el, page);
}

async function deadLetters(el: HTMLElement, page: QueuePage, cursor?: string): Promise<void> {
  const { client, view, signal } = page;
  const scope = { ...consumerScope(view), signal };
  try {
    const [found, byError] = await Promise.all([
      client.dlq(view.queue, { limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) }, scope),
      cursor ? undefined : client.dlqErrors(view.queue, scope),
    ]);
    if (signal.aborted) return;
    const rows = found.messages.map((m) => {
      const last = m.attempts.at(-1);
      return [
        h('a', { href: href({ ...view, id: m.message_id }), 'data-message': m.message_id }, m.message_id),
        m.key ?? '—',
        m.attempts.length,
        h('span', { class: 'error' }, last?.error ?? last?.reason ?? '—'),
        time(m.dead_at),
      ];
    });
    show(
      el,
      byError?.groups.length ? errorGroups(byError, page) : '',
      rows.length || cursor
        ? table(['Message', 'Key', 'Attempts', 'Last error', 'Dead at'], rows, { class: 'dlq' })
        : h('p', { class: 'muted' }, 'No dead letters.'),
      found.next_cursor
        ? h(
            'button',
            { type: 'button', onclick: () => void deadLetters(el, page, found.next_cursor ?? undefined) },
            'Next page',
          )
        : '',
    );
  } catch (error) {
    if (!signal.aborted) show(el, notice(error, `see the dead letters of ${view.queue}`));
  }
}

/** One bug or many: the dead letters by their last error, each group redriven on its own. */
function errorGroups(found: DeadLetterGroups, page: QueuePage): Node {
  const { client, view } = page;
  const status = h('div');
  const redrive = async (error: string) => {
    try {
      const filter = { error_contains: error };
      const started = await client.redrive(view.queue, { filter }, consumerScope(view));
      page.go({ tab: 'redrive', id: started.redrive_id });
    } catch (err) {
      show(status, notice(err, `redrive the dead letters failing with ${error}`));
    }
  };
  const rows = found.groups.map((g) => [
    g.count,
    h('span', { class: 'error' }, g.error),
    time(g.first_dead_at),
    time(g.last_dead_at),
    h('a', { href: href({ ...view, id: g.sample_message_id }) }, g.sample_message_id),
    // A group named by its reason has no error text to filter a redrive by.
    g.error.startsWith('(')
      ? '—'
      : h('button', { type: 'button', onclick: () => void redrive(g.error) }, 'Redrive this group'),
  ]);
  return h(
    'section',
    { 'aria-label': 'By error' },
    h('h3', {}, found.truncated ? `By error (the oldest ${found.grouped})` : 'By error'),
    table(['Count', 'Last error', 'First', 'Last', 'For example', ''], rows, { class: 'dlq-groups' }),
    status,
  );
}

async function deadLetter(el: HTMLElement, page: QueuePage, id: string): Promise<void> {
  const { client, view, signal } = page;
  try {
    const m = await client.dlqMessage(view.queue, id, {
      ...consumerScope(view),
      signal,
    });
    if (!signal.aborted) show(el, ...history(m, page));
  } catch (error) {
    if (!signal.aborted)
      show(
        el,
        h('p', {}, h('a', { href: href({ ...view, id: undefined }) }, '← Dead letters')),
        notice(error, `see the dead letter ${id}`),
      );
  }
}

function history(m: DeadLetter, page: QueuePage): Node[] {
  const back = h('a', { href: href({ ...page.view, id: undefined }) }, '← Dead letters');
  return [
    h('p', {}, back),
    h('h2', {}, `Dead letter ${m.message_id}`),
    h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'Key'),
      h('dd', {}, m.key ?? '—'),
      h('dt', {}, 'Enqueued'),
      h('dd', {}, time(m.enqueued_at)),
      h('dt', {}, 'Dead at'),
      h('dd', {}, time(m.dead_at)),
      h('dt', {}, 'Headers'),
      h('dd', {}, Object.keys(m.headers).length ? JSON.stringify(m.headers) : '—'),
    ),
    actions(m.message_id, page),
    h('h3', {}, `Attempts (${m.attempts.length})`),
    attemptsTable(m.attempts),
    h('h3', {}, 'Payload'),
    h('pre', { class: 'payload' }, pretty(m.payload)),
  ];
}

/** Trace it, or redrive it alone (then watch that redrive). */
function actions(id: string, page: QueuePage): HTMLElement {
  const { client, view } = page;
  const status = h('span');
  const redrive = async () => {
    try {
      const started = await client.redrive(
        view.queue,
        { filter: { message_ids: [id] } },
        consumerScope(view),
      );
      page.go({ tab: 'redrive', id: started.redrive_id });
    } catch (error) {
      show(status, notice(error, `redrive ${id}`));
    }
  };
  return h(
    'p',
    { class: 'actions' },
    h('button', { type: 'button', onclick: () => page.go({ tab: 'trace', id }) }, 'Trace it'),
    h('button', { type: 'button', onclick: () => void redrive() }, 'Redrive it'),
    status,
  );
}

export function attemptsTable(attempts: FailedAttempt[]): HTMLTableElement {
  return table(
    ['#', 'How it failed', 'Error', 'Delivered', 'Failed', 'Consumer'],
    attempts.map((a) => [
      a.attempt,
      a.reason.replace('_', ' '),
      h('span', { class: 'error' }, a.error ?? '—'),
      time(a.delivered_at),
      time(a.failed_at),
      a.consumer_id ?? '—',
    ]),
    { class: 'attempts' },
  );
}
