/**
 * Builds DynamoDB update and condition expressions with every attribute name aliased
 * (`#name`) and every input a bound value (`:name`): no input ever becomes expression text,
 * and reserved words (state, key, …) need no care.
 */

export class Raw {
  constructor(
    readonly text: string,
    readonly values: Record<string, unknown> = {},
  ) {}
}

export interface UpdateSpec {
  set?: Record<string, unknown>;
  remove?: string[];
  add?: Record<string, number>;
  /** A condition over `#attribute` names and `:value` placeholders given in `values`. */
  condition?: string;
  values?: Record<string, unknown>;
}

export interface BuiltExpression {
  UpdateExpression?: string;
  ConditionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, unknown>;
}

const NAME_REF = /#([A-Za-z_][A-Za-z0-9_]*)/g;

export function buildUpdate(spec: UpdateSpec): BuiltExpression {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const name = (attr: string) => {
    names[`#${attr}`] = attr;
    return `#${attr}`;
  };
  const setParts: string[] = [];
  for (const [attr, value] of Object.entries(spec.set ?? {})) {
    if (value === undefined) continue;
    if (value instanceof Raw) {
      setParts.push(`${name(attr)} = ${value.text}`);
      Object.assign(values, value.values);
      for (const m of value.text.matchAll(NAME_REF)) name(m[1] as string);
    } else {
      values[`:set_${attr}`] = value;
      setParts.push(`${name(attr)} = :set_${attr}`);
    }
  }
  // Counter names may be data (`throttled@<key name>`): aliased by position, not by name.
  const addParts = Object.entries(spec.add ?? {}).map(([attr, n], i) => {
    names[`#add${i}`] = attr;
    values[`:add${i}`] = n;
    return `#add${i} :add${i}`;
  });
  // A list element (`hist[2]`) is removed by its attribute's alias and its index.
  const removeParts = (spec.remove ?? []).map((attr) => {
    const element = /^([A-Za-z_][A-Za-z0-9_]*)\[(\d+)\]$/.exec(attr);
    return element ? `${name(element[1] as string)}[${element[2]}]` : name(attr);
  });
  const clauses = [
    setParts.length ? `SET ${setParts.join(', ')}` : '',
    addParts.length ? `ADD ${addParts.join(', ')}` : '',
    removeParts.length ? `REMOVE ${removeParts.join(', ')}` : '',
  ].filter(Boolean);
  return finish(clauses.join(' '), spec.condition, names, { ...values, ...(spec.values ?? {}) });
}

/** A Query's key condition, with names aliased as above. */
export function buildKeyCondition(
  condition: string,
  values: Record<string, unknown>,
): Omit<BuiltExpression, 'ConditionExpression'> & { KeyConditionExpression: string } {
  const { ConditionExpression, ...rest } = finish(undefined, condition, {}, values);
  return { ...rest, KeyConditionExpression: ConditionExpression as string };
}

function finish(
  update: string | undefined,
  condition: string | undefined,
  names: Record<string, string>,
  values: Record<string, unknown>,
): BuiltExpression {
  for (const m of condition?.matchAll(NAME_REF) ?? []) names[`#${m[1]}`] = m[1] as string;
  return {
    ...(update ? { UpdateExpression: update } : {}),
    ...(condition ? { ConditionExpression: condition } : {}),
    ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
    ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
  };
}
