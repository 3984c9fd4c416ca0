import * as http from 'node:http';
import * as https from 'node:https';

/**
 * The stack's custom resource for busy-time fan-out (infra/leaseq-tenant.ts, `BusyFanOut`): the
 * sweep registers a stream's consumer and maps dispatch to it at run time, outside
 * CloudFormation, and Kinesis refuses to delete a stream that still has a consumer. So before
 * CloudFormation deletes the stack, or a stream leaves `when_busy`, this function releases them
 * (mapping and consumer gone) and only then answers. A function of its own, not the sweep: the
 * sweep runs one at a time and drops an invocation older than a minute, and CloudFormation's
 * request would wait behind a running sweep.
 */

/** CloudFormation's custom resource request: what the sweep reads of it. */
export interface StackEvent {
  RequestType: 'Create' | 'Update' | 'Delete';
  ResponseURL: string;
  StackId: string;
  RequestId: string;
  LogicalResourceId: string;
  PhysicalResourceId?: string;
  ResourceProperties: { Streams?: string[] };
  OldResourceProperties?: { Streams?: string[] };
}

/** The streams to release: every one on Delete; on Update, those no longer on `when_busy`. */
export function streamsToRelease(event: StackEvent): string[] {
  const now = event.ResourceProperties.Streams ?? [];
  if (event.RequestType === 'Delete') return now;
  if (event.RequestType === 'Create') return [];
  return (event.OldResourceProperties?.Streams ?? []).filter((s) => !now.includes(s));
}

/** Releases what the event asks for, then answers CloudFormation; a release that failed answers FAILED with why. */
export async function answerStackEvent(
  event: StackEvent,
  release: (stream: string) => Promise<void>,
): Promise<void> {
  let failure: string | undefined;
  try {
    for (const stream of streamsToRelease(event)) await release(stream);
  } catch (err) {
    failure = `releasing busy-time fan-out failed: ${String(err)}`;
  }
  await put(event.ResponseURL, {
    Status: failure ? 'FAILED' : 'SUCCESS',
    ...(failure ? { Reason: failure } : {}),
    PhysicalResourceId: event.PhysicalResourceId ?? `${event.LogicalResourceId}-busy-fan-out`,
    StackId: event.StackId,
    RequestId: event.RequestId,
    LogicalResourceId: event.LogicalResourceId,
  });
}

/** The answer goes to a presigned S3 URL, signed for no content type. */
function put(url: string, answer: object): Promise<void> {
  const body = JSON.stringify(answer);
  const { request } = url.startsWith('https:') ? https : http;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'PUT', headers: { 'content-type': '', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () =>
          (res.statusCode ?? 500) < 300
            ? resolve()
            : reject(new Error(`the answer was refused: ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
