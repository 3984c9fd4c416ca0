import type { Redrive, RedriveRequest } from '../client/types.js';
import { notice } from './api.js';
import { field, h, show } from './dom.js';
import { count } from './format.js';
import { consumerScope } from './nav.js';
import { every } from './page.js';
import type { QueuePage } from './queue.js';

/** Redrive: dead letters back into the queue, filtered, at a rate; its progress live, and cancel. */

const PROGRESS_MS = 1000;

export function redriveTab(el: HTMLElement, page: QueuePage): void {
  if (page.view.id) progress(el, page, page.view.id);
  else show(el, startForm(page));
}

function startForm(page: QueuePage): HTMLFormElement {
  const { client, view } = page;
  const status = h('div');
  const form: HTMLFormElement = h(
    'form',
    {
      class: 'stacked',
      onsubmit: (event: Event) => {
        event.preventDefault();
        void (async () => {
          try {
            const started = await client.redrive(view.queue, request(form), consumerScope(view));
            page.go({ tab: 'redrive', id: started.redrive_id });
          } catch (error) {
            show(status, notice(error, `start a redrive of ${view.queue}`));
          }
        })();
      },
    },
    h(
      'p',
      { class: 'muted' },
      view.consumer
        ? `Puts ${view.consumer}'s dead letters back for that consumer only, each with a fresh attempt count.`
        : 'Puts the dead letters back into the queue, each with a fresh attempt count. Leave a filter empty to take every dead letter.',
    ),
    h(
      'label',
      {},
      'Rate (messages a second) ',
      h('input', { name: 'rate', type: 'number', min: 0.1, max: 1000, step: 'any', value: 10 }),
    ),
    h('label', {}, 'Last error contains ', h('input', { name: 'error', size: 40 })),
    h(
      'label',
      {},
      'Message ids (space or comma separated) ',
      h('textarea', { name: 'ids', rows: 2, cols: 40 }),
    ),
    h('label', {}, 'Dead after (UTC) ', h('input', { name: 'after', type: 'datetime-local', step: 1 })),
    h('label', {}, 'Dead before (UTC) ', h('input', { name: 'before', type: 'datetime-local', step: 1 })),
    h(
      'p',
      {},
      h('button', { type: 'submit' }, 'Start redrive'),
      ' ',
      h('button', { type: 'button', onclick: () => void countMatching() }, 'Count matching'),
    ),
    status,
  );
  // What the filter takes, before anything moves.
  const countMatching = async () => {
    try {
      const { filter } = request(form);
      const matching = await client.redriveMatching(view.queue, filter, consumerScope(view));
      show(status, h('p', { class: 'matching' }, `${count(matching)} dead letter(s) match this filter`));
    } catch (error) {
      show(status, notice(error, `count what a redrive of ${view.queue} would take`));
    }
  };
  return form;
}

/** The form as the API's body; a time is read as UTC, as every time on the page shows. */
function request(form: HTMLFormElement): RedriveRequest {
  const iso = (utc: string) => (utc ? new Date(`${utc}Z`).toISOString() : undefined);
  const ids = field(form, 'ids')
    .split(/[\s,]+/)
    .filter(Boolean);
  const filter = {
    ...(ids.length ? { message_ids: ids } : {}),
    ...(field(form, 'error') ? { error_contains: field(form, 'error') } : {}),
    ...(iso(field(form, 'after')) ? { dead_after: iso(field(form, 'after')) } : {}),
    ...(iso(field(form, 'before')) ? { dead_before: iso(field(form, 'before')) } : {}),
  };
  const rate = Number(field(form, 'rate'));
  return { ...(rate > 0 ? { rate_per_sec: rate } : {}), filter };
}

function progress(el: HTMLElement, page: QueuePage, id: string): void {
  const { client, view, signal } = page;
  const scope = consumerScope(view);
  const bar = h('progress', { max: 1, value: 0 });
  const figures = h('p', { 'data-redrive-status': '' });
  const status = h('div');
  const cancel = h('button', { type: 'button' }, 'Cancel redrive');
  const draw = (r: Redrive) => {
    const total = r.moved + r.remaining;
    bar.max = Math.max(total, 1);
    bar.value = total ? r.moved : 1;
    figures.dataset.redriveStatus = r.status;
    figures.textContent = `${r.status}: ${count(r.moved)} of ${count(total)} moved, ${count(r.remaining)} left, at ${r.rate_per_sec}/s`;
    cancel.hidden = r.status !== 'running';
  };
  cancel.addEventListener('click', async () => {
    try {
      draw(await client.cancelRedrive(view.queue, id, scope));
    } catch (error) {
      show(status, notice(error, 'cancel the redrive'));
    }
  });
  show(
    el,
    h('h2', {}, `Redrive ${id}`),
    bar,
    figures,
    h(
      'p',
      { class: 'actions' },
      cancel,
      h('button', { type: 'button', onclick: () => page.go({ tab: 'redrive' }) }, 'New redrive'),
    ),
    status,
  );
  every(signal, PROGRESS_MS, async () => {
    try {
      const r = await client.getRedrive(view.queue, id, { ...scope, signal });
      if (signal.aborted) return false;
      draw(r);
      return r.status === 'running';
    } catch (error) {
      if (!signal.aborted) show(status, notice(error, `follow the redrive ${id}`));
      return false;
    }
  });
}
