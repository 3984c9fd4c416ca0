// The isolation phase's control (bench/isolation.ts): a bare HTTP server in a process of its own
// that refuses every request as API Gateway's throttle does, so the flood's cost to the machine
// (the senders, and the refusals' HTTP work) is measured without leaseq's process in its path.
// Plain JavaScript, started with `node`: it prints its port and serves until killed.
import { createServer } from 'node:http';

const TOO_MANY_REQUESTS = JSON.stringify({ message: 'Too Many Requests' });
const server = createServer((req, res) => {
  req.resume();
  res.writeHead(429, { 'content-type': 'application/json' });
  res.end(TOO_MANY_REQUESTS);
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
