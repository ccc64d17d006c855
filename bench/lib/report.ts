/** The stdout table and the HTML page (inline SVG, no dependencies) written next to the JSON. */

export interface SweepPoint {
  capacity: number;
  connections: number;
  attempts: number;
  attemptsPerSecond: number;
  reservationsPerSecond: number;
  p50: number;
  p99: number;
  errors: number;
  soldMinusCapacity: number;
  /** CPU cores other jobs on the machine used meanwhile (> 0.3: the point is low). */
  othersCores: number;
}

export function table(headers: string[], rows: Array<Array<string | number>>): string {
  const cells = [headers, ...rows.map((row) => row.map(String))];
  const widths = headers.map((_, c) => Math.max(...cells.map((row) => (row[c] ?? '').length)));
  const line = (row: string[]) => row.map((cell, c) => cell.padEnd(widths[c] ?? 0)).join('  ');
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] ?? c);

/** A grouped bar chart: one group per label, one bar per series. */
function bars(
  title: string,
  unit: string,
  labels: string[],
  series: Array<{ name: string; color: string; values: number[] }>,
): string {
  const width = 760;
  const height = 300;
  const left = 60;
  const bottom = 60;
  const top = 30;
  const max = Math.max(1, ...series.flatMap((s) => s.values)) * 1.1;
  const groupWidth = (width - left - 10) / Math.max(1, labels.length);
  const barWidth = Math.min(40, (groupWidth * 0.8) / Math.max(1, series.length));
  const y = (v: number) => top + (height - top - bottom) * (1 - v / max);
  const parts: string[] = [];
  for (let t = 0; t <= 4; t += 1) {
    const v = (max / 4) * t;
    parts.push(
      `<line x1="${left}" x2="${width - 10}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`,
      `<text x="${left - 6}" y="${y(v) + 4}" text-anchor="end" font-size="11">${Math.round(v)}</text>`,
    );
  }
  labels.forEach((label, g) => {
    const x0 = left + g * groupWidth + (groupWidth - barWidth * series.length) / 2;
    series.forEach((s, i) => {
      const v = s.values[g] ?? 0;
      const x = x0 + i * barWidth;
      parts.push(
        `<rect x="${x}" y="${y(v)}" width="${barWidth - 2}" height="${y(0) - y(v)}" fill="${s.color}"><title>${escapeHtml(`${s.name} ${label}: ${v} ${unit}`)}</title></rect>`,
        `<text x="${x + barWidth / 2 - 1}" y="${y(v) - 3}" text-anchor="middle" font-size="10">${Math.round(v)}</text>`,
      );
    });
    parts.push(
      `<text x="${left + g * groupWidth + groupWidth / 2}" y="${height - bottom + 16}" text-anchor="middle" font-size="11">${escapeHtml(label)}</text>`,
    );
  });
  const legend = series
    .map(
      (s, i) =>
        `<rect x="${left + i * 170}" y="${height - 22}" width="12" height="12" fill="${s.color}"/><text x="${left + i * 170 + 16}" y="${height - 12}" font-size="12">${escapeHtml(s.name)}</text>`,
    )
    .join('');
  return `<h2>${escapeHtml(title)}</h2><svg width="${width}" height="${height}" xmlns="http://www.w3.org/2000/svg" font-family="sans-serif">${parts.join('')}${legend}<text x="10" y="18" font-size="12">${escapeHtml(unit)}</text></svg>`;
}

export function sweepHtml(title: string, machine: string, points: SweepPoint[], summary: string): string {
  const labels = points.map((p) => `C=${p.capacity} N=${p.connections}`);
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>body{font-family:sans-serif;margin:24px;max-width:900px}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}pre{background:#f6f6f6;padding:12px;overflow:auto}</style></head><body>
<h1>${escapeHtml(title)}</h1><p>${escapeHtml(machine)}</p>
${bars('Throughput by capacity (C) and connections (N)', 'requests / s', labels, [
  { name: 'attempts/s', color: '#4a78c2', values: points.map((p) => p.attemptsPerSecond) },
  { name: 'reservations/s', color: '#5aa469', values: points.map((p) => p.reservationsPerSecond) },
])}
${bars('Latency of POST /customer/orders', 'ms', labels, [
  { name: 'p50', color: '#9bb8e3', values: points.map((p) => p.p50) },
  { name: 'p99', color: '#d0663f', values: points.map((p) => p.p99) },
])}
<h2>Points</h2><table><tr><th>capacity</th><th>connections</th><th>attempts</th><th>attempts/s</th><th>reservations/s</th><th>p50 ms</th><th>p99 ms</th><th>errors</th><th>sold − capacity</th><th>other jobs, cores</th></tr>
${points
  .map(
    (p) =>
      `<tr><td>${p.capacity}</td><td>${p.connections}</td><td>${p.attempts}</td><td>${p.attemptsPerSecond}</td><td>${p.reservationsPerSecond}</td><td>${p.p50}</td><td>${p.p99}</td><td>${p.errors}</td><td>${p.soldMinusCapacity}</td><td>${p.othersCores}</td></tr>`,
  )
  .join('\n')}</table>
<h2>Run summary</h2><pre>${escapeHtml(summary)}</pre></body></html>`;
}
