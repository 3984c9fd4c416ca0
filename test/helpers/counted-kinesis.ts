import type { KinesisClient } from '../../functions/aws/kinesis.js';

export interface SentCommand {
  operation: string;
  input: { Limit?: number };
}

/** A real Kinesis client that tells `seen` of each command before sending it: what a test says a path reads. */
export function countedKinesis(kinesis: KinesisClient, seen: (command: SentCommand) => void): KinesisClient {
  return {
    send: (command: SentCommand) => {
      seen(command);
      return kinesis.send(command as never);
    },
  } as unknown as KinesisClient;
}
