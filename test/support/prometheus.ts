/** Reads Prometheus text exposition as tests need it: one number per series, found by name and labels. */

export interface Series {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Prometheus spells infinities `+Inf` and `-Inf`, which Number() does not read. */
const numberOf = (text: string): number => (text === '+Inf' ? Infinity : text === '-Inf' ? -Infinity : Number(text));

export function parseMetrics(text: string): Series[] {
  const series: Series[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const match = LINE.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const label of (match[2] ?? '').matchAll(LABEL)) labels[label[1] as string] = label[2] as string;
    series.push({ name: match[1] as string, labels, value: numberOf(match[3] as string) });
  }
  return series;
}

/** Sum of the series named `name` whose labels include `labels` (0 when none: a counter never incremented). */
export function total(series: readonly Series[], name: string, labels: Record<string, string> = {}): number {
  return series
    .filter((s) => s.name === name && Object.entries(labels).every(([key, value]) => s.labels[key] === value))
    .reduce((sum, s) => sum + s.value, 0);
}

export const names = (series: readonly Series[]): Set<string> => new Set(series.map((s) => s.name));

export async function scrape(url: string, headers: Record<string, string> = {}): Promise<Series[]> {
  const response = await fetch(url, { headers });
  if (response.status !== 200) throw new Error(`GET ${url} → ${response.status}`);
  return parseMetrics(await response.text());
}
