import type * as D from '@aws-sdk/client-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type * as Doc from '@aws-sdk/lib-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { AwsJsonClient, type AwsJsonClientConfig, commandClass, type WireOutput } from './aws-json.js';

/**
 * DynamoDB with native JavaScript values, as the SDK's document client gives it (`GetCommand`,
 * `PutCommand`, …: the same names, inputs and outputs, typed from `@aws-sdk/lib-dynamodb`), over
 * the lean JSON client (aws/aws-json.ts). Values are converted by the SDK's own marshaller with the
 * options leaseq's document client had (`removeUndefinedValues`).
 */

export const DYNAMODB = {
  name: 'DynamoDB',
  signingName: 'dynamodb',
  targetPrefix: 'DynamoDB_20120810',
  jsonVersion: '1.0',
  reviver: binaryReviver,
} as const;

/** Items in, native values out: what every adapter holds (`doc`). */
export type DocumentClient = AwsJsonClient;

export function createDocumentClient(config: AwsJsonClientConfig): DocumentClient {
  return new AwsJsonClient(DYNAMODB, config);
}

type Item = Record<string, unknown>;
type WireItem = Record<string, AttributeValue>;

const toItem = (item: Item): Item => marshall(item, { removeUndefinedValues: true });
const fromItem = (item: Item): Item => unmarshall(item as WireItem);

const bytes = (base64: string) => new Uint8Array(Buffer.from(base64, 'base64'));

/**
 * The wire's `B` and `BS` (base64) back to bytes as the answer is parsed, in maps and lists too:
 * no second walk of every item. Only an attribute value has a string under `B`.
 */
function binaryReviver(key: string, value: unknown): unknown {
  if (key === 'B' && typeof value === 'string') return bytes(value);
  if (key === 'BS' && Array.isArray(value)) return value.map((b) => bytes(String(b)));
  return value;
}

type WriteRequest = { PutRequest?: { Item: Item }; DeleteRequest?: { Key: Item } };
type KeysAndAttributes = { Keys: Item[] } & Record<string, unknown>;
/** A batch's items by table: keys to get, or writes. */
type BatchItems = Record<string, KeysAndAttributes | WriteRequest[]>;

const mapValues = <T, U>(record: Record<string, T>, f: (value: T) => U): Record<string, U> =>
  Object.fromEntries(Object.entries(record).map(([k, v]) => [k, f(v)]));

function writeRequest(request: WriteRequest, convert: (item: Item) => Item): WriteRequest {
  return {
    ...(request.PutRequest ? { PutRequest: { Item: convert(request.PutRequest.Item) } } : {}),
    ...(request.DeleteRequest ? { DeleteRequest: { Key: convert(request.DeleteRequest.Key) } } : {}),
  };
}

/** A batch's `RequestItems` (or what it left unprocessed): keys to get, or writes. */
function requestItems(items: BatchItems, convert: (item: Item) => Item): Record<string, unknown> {
  return mapValues(items, (entry) =>
    Array.isArray(entry)
      ? entry.map((r) => writeRequest(r, convert))
      : { ...entry, Keys: entry.Keys.map(convert) },
  );
}

const ITEM_MEMBERS = ['Key', 'Item', 'ExpressionAttributeValues', 'ExclusiveStartKey'] as const;

function inputToWire(input: Record<string, unknown>): object {
  const wire: Record<string, unknown> = { ...input };
  for (const member of ITEM_MEMBERS) if (input[member]) wire[member] = toItem(input[member] as Item);
  if (input.RequestItems) wire.RequestItems = requestItems(input.RequestItems as BatchItems, toItem);
  return wire;
}

function outputFromWire(output: WireOutput): WireOutput {
  const native: WireOutput = { ...output };
  for (const member of ['Item', 'Attributes', 'LastEvaluatedKey']) {
    const item = output[member] as Item | undefined;
    if (item) native[member] = fromItem(item);
  }
  if (output.Items) native.Items = (output.Items as Item[]).map(fromItem);
  if (output.Responses)
    native.Responses = mapValues(output.Responses as Record<string, Item[]>, (items) => items.map(fromItem));
  for (const member of ['UnprocessedKeys', 'UnprocessedItems'])
    if (output[member]) native[member] = requestItems(output[member] as BatchItems, fromItem);
  return native;
}

const documentCommand = <Input extends object, Output>(operation: string) =>
  commandClass<Input, Output>(
    operation,
    (input) => inputToWire(input as Record<string, unknown>),
    outputFromWire,
  );

export const GetCommand = documentCommand<Doc.GetCommandInput, Doc.GetCommandOutput>('GetItem');
export const PutCommand = documentCommand<Doc.PutCommandInput, Doc.PutCommandOutput>('PutItem');
export const UpdateCommand = documentCommand<Doc.UpdateCommandInput, Doc.UpdateCommandOutput>('UpdateItem');
export const DeleteCommand = documentCommand<Doc.DeleteCommandInput, Doc.DeleteCommandOutput>('DeleteItem');
export const QueryCommand = documentCommand<Doc.QueryCommandInput, Doc.QueryCommandOutput>('Query');
export const ScanCommand = documentCommand<Doc.ScanCommandInput, Doc.ScanCommandOutput>('Scan');
export const BatchGetCommand = documentCommand<Doc.BatchGetCommandInput, Doc.BatchGetCommandOutput>(
  'BatchGetItem',
);
export const BatchWriteCommand = documentCommand<Doc.BatchWriteCommandInput, Doc.BatchWriteCommandOutput>(
  'BatchWriteItem',
);

/** A query's pages, each asked from where the last ended (the SDK's `paginateQuery`). */
export async function* paginateQuery(
  client: DocumentClient,
  input: Doc.QueryCommandInput,
): AsyncGenerator<Doc.QueryCommandOutput> {
  let start: Doc.QueryCommandInput['ExclusiveStartKey'];
  do {
    const page = await client.send(
      new QueryCommand({ ...input, ...(start ? { ExclusiveStartKey: start } : {}) }),
    );
    yield page;
    start = page.LastEvaluatedKey;
  } while (start);
}

/** Reads of the table's own settings (the sweep's drift check): no items, nothing to convert. */
const tableCommand = <Input extends object, Output>(operation: string) =>
  commandClass<Input, Output>(
    operation,
    (input) => input,
    (output) => output,
  );

export const DescribeTableCommand = tableCommand<D.DescribeTableCommandInput, D.DescribeTableCommandOutput>(
  'DescribeTable',
);
export const DescribeContinuousBackupsCommand = tableCommand<
  D.DescribeContinuousBackupsCommandInput,
  D.DescribeContinuousBackupsCommandOutput
>('DescribeContinuousBackups');
