import type { SendOptions } from '../../functions/aws/aws-json.js';
import type { KinesisClient } from '../../functions/aws/kinesis.js';

export interface SentCommand {
  operation: string;
  input: { Limit?: number };
}

/** A real Kinesis client that tells `seen` of each command before sending it: what a test says a path reads. */
export function countedKinesis(kinesis: KinesisClient, seen: (command: SentCommand) => void): KinesisClient {
  return {
    send: (command: SentCommand, options?: SendOptions) => {
      seen(command);
      return kinesis.send(command as never, options);
    },
  } as unknown as KinesisClient;
}
