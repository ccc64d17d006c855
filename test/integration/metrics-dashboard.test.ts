/**
 * The Grafana dashboard (ops/grafana/ticketing-dashboard.json) stays importable and in step with the metrics the code
 * defines: a renamed metric breaks this test, not the operators' view in the middle of an on-sale. Its Temporal SDK
 * metric names are checked against a live worker in test/e2e/metrics.test.ts.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Histogram } from 'prom-client';
import { createApiMetrics, processRegistry, workerRegistry } from '../../observability/metrics.js';

const DASHBOARD_PATH = fileURLToPath(new URL('../../ops/grafana/ticketing-dashboard.json', import.meta.url));

interface Panel {
  type: string;
  title: string;
  targets?: { expr: string; datasource: { uid: string } }[];
  gridPos: { h: number; w: number; x: number; y: number };
}

const dashboard = JSON.parse(readFileSync(DASHBOARD_PATH, 'utf8')) as {
  uid: string;
  title: string;
  __inputs: { name: string; pluginId: string }[];
  panels: Panel[];
};
const expressions = dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => target.expr));

/** Every series name the code can expose, histograms with their _bucket/_sum/_count series. */
function definedNames(): Set<string> {
  const api = createApiMetrics({ orm: {} as MikroORM });
  const metrics = [api.registry, workerRegistry, processRegistry()].flatMap((registry) => registry.getMetricsAsArray());
  return new Set(
    metrics.flatMap((metric) =>
      metric instanceof Histogram
        ? [metric.name, `${metric.name}_bucket`, `${metric.name}_sum`, `${metric.name}_count`]
        : [metric.name],
    ),
  );
}

describe('the Grafana dashboard', () => {
  test('is an importable dashboard asking for its Prometheus data source', () => {
    expect(dashboard.uid).toBe('ticketing-on-sale');
    expect(dashboard.__inputs).toEqual([expect.objectContaining({ name: 'DS_PROMETHEUS', pluginId: 'prometheus' })]);
    const queried = dashboard.panels.filter((panel) => panel.type !== 'row');
    expect(queried.length).toBeGreaterThan(10);
    for (const panel of queried) {
      expect(panel.targets?.length).toBeGreaterThan(0);
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's import placeholder, not a template literal
      for (const target of panel.targets ?? []) expect(target.datasource.uid).toBe('${DS_PROMETHEUS}');
      expect(panel.gridPos.x + panel.gridPos.w).toBeLessThanOrEqual(24);
    }
  });

  test('queries only ticketing_ metrics the code defines', () => {
    const defined = definedNames();
    const used = new Set(expressions.flatMap((expr) => [...expr.matchAll(/\bticketing_[a-z0-9_]+/g)].map((m) => m[0])));
    expect(used.size).toBeGreaterThan(10);
    for (const name of used) expect([name, defined.has(name)]).toEqual([name, true]);
  });

  test('shows every business counter and the stock gauge', () => {
    const text = expressions.join('\n');
    for (const { name } of workerRegistry.getMetricsAsArray())
      expect([name, text.includes(name)]).toEqual([name, true]);
    expect(text).toContain('ticketing_stock_available');
  });
});
