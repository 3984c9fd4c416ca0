import { clientFor, notice } from './api.js';
import { h, show } from './dom.js';
import { keyPage } from './key.js';
import { parseHash } from './nav.js';
import { queuePage } from './queue.js';
import { queuesPage } from './queues.js';
import { forgetKey, storedKey } from './session.js';

/**
 * The console's entry: draws the page the hash names, under the key of this tab. Plain
 * TypeScript and the DOM, no framework (docs/operations.md, "Console").
 */

const main = document.getElementById('main') as HTMLElement;
const session = document.getElementById('session') as HTMLElement;
let leaving: AbortController | undefined;

function draw(): void {
  leaving?.abort();
  const here = new AbortController();
  leaving = here;
  const key = storedKey();
  if (!key) {
    show(session);
    keyPage(main, draw);
    return;
  }
  show(
    session,
    h('span', { class: 'muted' }, `key …${key.slice(-4)} `),
    h(
      'button',
      {
        type: 'button',
        onclick: () => {
          forgetKey();
          draw();
        },
      },
      'Forget key',
    ),
  );
  const page = { client: clientFor(key), signal: here.signal };
  const view = parseHash(location.hash);
  if (view.page === 'queues') queuesPage(main, page);
  else void queuePage(main, page, view);
}

// A failure no page caught is still shown as a sentence, never as a blank or broken page.
window.addEventListener('unhandledrejection', (event) => {
  event.preventDefault();
  main.prepend(notice(event.reason, 'finish that'));
});
window.addEventListener('hashchange', draw);
draw();
