import { clientFor, explain } from './api.js';
import { field, h, show } from './dom.js';
import { storeKey } from './session.js';

/** The first page: the reader pastes an API key, which is kept only if the API knows it. */

export function keyPage(main: HTMLElement, onKey: () => void): void {
  const status = h('p', { role: 'status' });
  const form: HTMLFormElement = h(
    'form',
    {
      class: 'stacked key',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        const key = field(form, 'key');
        if (!key) return;
        try {
          await clientFor(key).queues();
          storeKey(key);
          onKey();
        } catch (error) {
          status.className = 'notice failed';
          status.textContent = explain(error, 'sign in');
        }
      },
    },
    h('h1', {}, 'leaseq console'),
    h(
      'p',
      { class: 'muted' },
      'Paste an API key. Every call is made with it, under its scopes; it is kept in this tab only (sessionStorage) and forgotten when the tab closes.',
    ),
    h(
      'label',
      {},
      'API key ',
      h('input', { name: 'key', type: 'password', autocomplete: 'off', required: true, size: 48 }),
    ),
    h('p', {}, h('button', { type: 'submit' }, 'Open')),
    status,
  );
  show(main, form);
}
