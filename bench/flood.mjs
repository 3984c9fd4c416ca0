// The isolation phase's flood (bench/isolation.ts): senders that post produce requests of `batch`
// messages to a queue at `perSecond` in all (open loop: a sender late on its answer is not waited
// for by the others), until told to stop; then it sends back what it was answered.
// A process of its own, started at the lowest CPU priority: on AWS the flood's clients are other
// machines, so here they take only the CPU that the runtime and quiet's client leave. Plain
// JavaScript, started with `node`; its settings come as JSON in its one argument.
const { url, key, queue, senders, perSecond, batch, payloadBytes } = JSON.parse(process.argv[2]);
// One body for every request: the load generator's own work stays small beside what it measures.
const body = JSON.stringify({
  messages: Array.from({ length: batch }, (_, i) => ({
    payload: { flood: i, filler: 'x'.repeat(payloadBytes) },
  })),
});
const answers = {};
let stopped = false;
let sent = 0;
const startedAt = Date.now();

process.on('message', (message) => {
  if (message === 'stop') stopped = true;
});

async function sender() {
  while (!stopped) {
    // The n-th request is due at n / perSecond seconds.
    const due = startedAt + (sent++ / perSecond) * 1000;
    const wait = due - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    let kind;
    try {
      const res = await fetch(`${url}/queues/${queue}/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body,
      });
      const answer = await res.json();
      // API Gateway's refusal has only a message; the function's has leaseq's error code.
      kind = res.status === 200 ? 'accepted' : `${res.status} ${answer.error?.code ?? 'gateway'}`;
    } catch (error) {
      kind = `network ${error.cause?.code ?? error.name}`;
    }
    answers[kind] = (answers[kind] ?? 0) + 1;
  }
}

await Promise.all(Array.from({ length: senders }, sender));
// The isolation phase kills this process once it has the report.
process.send({ answers, seconds: (Date.now() - startedAt) / 1000 });
