import type { ConsumerDescription } from '@aws-sdk/client-kinesis';
import { sleep } from '../core/async.js';
import { BUSY_MAPPING, type FanOutState, type FanOutSwitch } from '../core/fan-out-switch.js';
import { createRequestHandler } from './clients.js';
import { type EventSourceMapping, EventSourceMappingsClient } from './event-source-mappings.js';
import {
  createKinesisClient,
  DeregisterStreamConsumerCommand,
  DescribeStreamConsumerCommand,
  DescribeStreamSummaryCommand,
  type KinesisClient,
  RegisterStreamConsumerCommand,
} from './kinesis.js';

/**
 * A stream's busy-time fan-out on AWS: an enhanced fan-out consumer registered on the stream, and
 * an event source mapping of the dispatch function on that consumer. Mechanism only: when to
 * switch is the sweep's decision (core/fan-out-switch.ts). Every step reads what AWS has now, so
 * any number of sweep instances may step at once and a step that fails half-way is taken up again.
 * `state` says 'off' only when no consumer is registered or it is being deleted: a consumer that
 * bills is always seen, and turned off in the end.
 */

export interface AwsFanOutSwitchOptions {
  kinesis: KinesisClient;
  mappings: EventSourceMappingsClient;
  /** The dispatch function's name or ARN. */
  dispatchFunction: string;
  /** Default 'leaseq-dispatch'; unique per stream, so one name serves every stream. */
  consumerName?: string;
}

/** The busy-time mapping's settings: where it starts and its batches are BUSY_MAPPING's; the rest is the polled mapping's (infra/log-stream.ts). */
const MAPPING = {
  StartingPosition: BUSY_MAPPING.startingPosition,
  BatchSize: BUSY_MAPPING.batchSize,
  MaximumBatchingWindowInSeconds: 0,
  ParallelizationFactor: 1,
  FunctionResponseTypes: ['ReportBatchItemFailures'],
  BisectBatchOnFunctionError: false,
  MaximumRetryAttempts: -1,
  MaximumRecordAgeInSeconds: -1,
  Enabled: true,
} as const;

const named = (err: unknown, ...names: string[]) => names.includes((err as Error).name);

export class AwsFanOutSwitch implements FanOutSwitch {
  private readonly consumerName: string;
  /** Stream ARNs by name: a stream's ARN does not change while it lives. */
  private readonly streamArns = new Map<string, string>();

  constructor(private readonly options: AwsFanOutSwitchOptions) {
    this.consumerName = options.consumerName ?? 'leaseq-dispatch';
  }

  async state(stream: string): Promise<FanOutState> {
    const consumer = await this.consumer(stream);
    if (!consumer || consumer.ConsumerStatus === 'DELETING') return 'off';
    if (consumer.ConsumerStatus !== 'ACTIVE') return 'starting';
    return (await this.mappingsOn(consumer)).length > 0 ? 'on' : 'starting';
  }

  async turnOn(stream: string): Promise<FanOutState> {
    const consumer = await this.consumer(stream);
    if (!consumer) {
      try {
        await this.options.kinesis.send(
          new RegisterStreamConsumerCommand({
            StreamARN: await this.streamArn(stream),
            ConsumerName: this.consumerName,
          }),
        );
      } catch (err) {
        // Another instance registered it between the look and this call.
        if (!named(err, 'ResourceInUseException')) throw err;
      }
      return 'starting';
    }
    // A consumer on its way out cannot be mapped; the next pass registers a new one.
    if (consumer.ConsumerStatus === 'DELETING') return 'off';
    if (consumer.ConsumerStatus !== 'ACTIVE') return 'starting';
    if ((await this.mappingsOn(consumer)).length > 0) return 'on';
    await this.options.mappings.create({
      ...MAPPING,
      FunctionResponseTypes: [...MAPPING.FunctionResponseTypes],
      FunctionName: this.options.dispatchFunction,
      EventSourceArn: consumer.ConsumerARN as string,
    });
    return 'on';
  }

  async turnOff(stream: string): Promise<void> {
    const consumer = await this.consumer(stream);
    if (!consumer) return;
    // A mapping already deleting needs nothing more (a second delete may be refused meanwhile).
    for (const mapping of await this.mappingsOn(consumer))
      if (mapping.State !== 'Deleting') await this.options.mappings.delete(mapping.UUID);
    if (consumer.ConsumerStatus === 'DELETING') return;
    try {
      // By ARN: this registration, not one made again under the name since the look.
      await this.options.kinesis.send(
        new DeregisterStreamConsumerCommand({ ConsumerARN: consumer.ConsumerARN as string }),
      );
    } catch (err) {
      // Gone, or already being deleted by another instance.
      if (!named(err, 'ResourceNotFoundException', 'ResourceInUseException')) throw err;
    }
  }

  /**
   * turnOff, then waits until the consumer is gone (Kinesis deletes a stream only then), looking
   * every `everyMs` until `deadline` (epoch ms): false when it is still there.
   */
  async release(stream: string, deadline: number, everyMs = 2000): Promise<boolean> {
    await this.turnOff(stream);
    for (;;) {
      if (!(await this.consumer(stream))) return true;
      if (Date.now() + everyMs > deadline) return false;
      await sleep(everyMs);
    }
  }

  /** The stream's consumer of this name, undefined when none is registered. */
  private async consumer(stream: string): Promise<ConsumerDescription | undefined> {
    try {
      const { ConsumerDescription } = await this.options.kinesis.send(
        new DescribeStreamConsumerCommand({
          StreamARN: await this.streamArn(stream),
          ConsumerName: this.consumerName,
        }),
      );
      return ConsumerDescription;
    } catch (err) {
      if (named(err, 'ResourceNotFoundException')) return undefined;
      throw err;
    }
  }

  private mappingsOn(consumer: ConsumerDescription): Promise<EventSourceMapping[]> {
    return this.options.mappings.list({
      functionName: this.options.dispatchFunction,
      eventSourceArn: consumer.ConsumerARN as string,
    });
  }

  private async streamArn(stream: string): Promise<string> {
    let arn = this.streamArns.get(stream);
    if (!arn) {
      const { StreamDescriptionSummary } = await this.options.kinesis.send(
        new DescribeStreamSummaryCommand({ StreamName: stream }),
      );
      arn = StreamDescriptionSummary?.StreamARN;
      if (!arn) throw new Error(`Kinesis described ${stream} without its ARN`);
      this.streamArns.set(stream, arn);
    }
    return arn;
  }
}

/** The switch with clients of its own (the sweep's and the release function's). */
export function createAwsFanOutSwitch(region: string, dispatchFunction: string): AwsFanOutSwitch {
  const requestHandler = createRequestHandler();
  return new AwsFanOutSwitch({
    kinesis: createKinesisClient({ region, maxAttempts: 4, requestHandler }),
    mappings: new EventSourceMappingsClient({ region, requestHandler }),
    dispatchFunction,
  });
}
