/**
 * A tiny SQL composer for the report queries: fragments carry their own parameters, so filters can be assembled
 * piece by piece and every value still travels as a bound parameter (`?`, as `em.execute` takes them), never as
 * text spliced into the statement.
 */
export interface Sql {
  readonly text: string;
  readonly params: readonly unknown[];
}

const isSql = (value: unknown): value is Sql =>
  typeof value === 'object' && value !== null && 'text' in value && 'params' in value;

/** `sql\`… ${value} …\``: a value becomes a `?` parameter; a nested fragment is inlined with its parameters. */
export function sql(strings: TemplateStringsArray, ...values: unknown[]): Sql {
  let text = strings[0] ?? '';
  const params: unknown[] = [];
  values.forEach((value, index) => {
    if (isSql(value)) {
      text += value.text;
      params.push(...value.params);
    } else {
      text += '?';
      params.push(value);
    }
    text += strings[index + 1] ?? '';
  });
  return { text, params };
}

export const EMPTY: Sql = { text: '', params: [] };

/** Joins fragments with a separator (`and` between conditions); an empty list gives `fallback`. */
export function joinSql(parts: readonly Sql[], separator: string, fallback: Sql = EMPTY): Sql {
  if (parts.length === 0) return fallback;
  return { text: parts.map((part) => part.text).join(separator), params: parts.flatMap((part) => part.params) };
}

/** Trusted SQL text (column names, fixed keywords chosen by code, never by the caller). */
export const raw = (text: string): Sql => ({ text, params: [] });
