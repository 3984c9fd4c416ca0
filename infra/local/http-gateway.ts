import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type { GatewayThrottles } from '../../functions/core/gateway-throttles.js';
import type { GatewayThreadData } from './gateway-thread.js';
import { lambdaContext } from './lambda-context.js';

/**
 * Plays API Gateway (HTTP API, payload format 2.0) in front of the api function: its thread
 * (gateway-thread.ts) turns each request it lets through into the event AWS would send, the
 * handler runs here, and its result becomes the response.
 */

export type HttpHandler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

/** What the gateway's thread sends: where it listens, a request's event, that it closed. */
export type FromGateway =
  | { listening: string }
  | { request: number; event: APIGatewayProxyEventV2 }
  | 'closed';
/** What it is sent: a request's answer (the handler's result, or why it threw), or to close. */
export type ToGateway = GatewayAnswer | 'close';
export type GatewayAnswer =
  | { answer: number; result: APIGatewayProxyStructuredResultV2 }
  | { answer: number; error: string };

export interface Gateway {
  url: string;
  close(): Promise<void>;
}

// The thread's module is TypeScript in the repository and JavaScript in the package's dist/.
const THREAD = new URL(`./gateway-thread${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

export async function startGateway(
  handler: HttpHandler,
  port: number,
  throttles?: GatewayThrottles,
): Promise<Gateway> {
  const worker = new Worker(new URL('./ts-thread.mjs', import.meta.url), {
    workerData: {
      entry: THREAD.href,
      port,
      ...(throttles ? { throttles } : {}),
    } satisfies GatewayThreadData & {
      entry: string;
    },
  });
  const answer = (message: ToGateway) => worker.postMessage(message);
  worker.on('message', (message: FromGateway) => {
    if (typeof message !== 'object' || !('request' in message)) return;
    const id = message.request;
    handler(message.event, lambdaContext('api')).then(
      (result) => answer({ answer: id, result }),
      (err: Error) => answer({ answer: id, error: err.message }),
    );
  });
  const [started] = (await Promise.race([
    once(worker, 'message'),
    once(worker, 'error').then(([err]) => Promise.reject(err)),
  ])) as [FromGateway];
  if (typeof started !== 'object' || !('listening' in started))
    throw new Error(`the gateway's thread answered ${JSON.stringify(started)} before it listened`);
  return {
    url: started.listening,
    async close() {
      const closed = new Promise<void>((resolve) =>
        worker.on('message', (m: FromGateway) => m === 'closed' && resolve()),
      );
      answer('close');
      await closed;
      await worker.terminate();
    },
  };
}
