/**
 * Where the API starts shedding load (issue 17): an open-loop ramp of request rates on an organizer read (an event
 * list: authentication, a query, serialization) with the load-shedding thresholds the API ships with. Arrivals are
 * scheduled at a fixed rate whatever the answers (as independent buyers arrive), so past the API's capacity the
 * offered load exceeds what it can serve. Each step records what was served, what was shed (503 `overloaded` with
 * Retry-After, answered before any database work) and the latency of the served requests: the output shows the rate
 * at which shedding begins and that served requests keep a bounded latency past it instead of queueing without bound.
 */
import { errorOf, HttpClient, type HttpResult, type LatencySummary, summarize } from './http.js';
import type { BenchContext } from './phases.js';

export interface SheddingStep {
  offeredPerSecond: number;
  requests: number;
  served: number;
  servedPerSecond: number;
  shed: number;
  shedRatio: number;
  /** Anything else: other statuses and network errors. */
  other: number;
  servedLatencyMs: LatencySummary;
  shedLatencyMs: LatencySummary;
  retryAfterSeconds: number | null;
  /** The API's own count of shed requests by trigger (its /metrics), during this step. */
  shedByReason: Record<string, number>;
}

export interface SheddingRamp {
  path: string;
  stepMs: number;
  steps: SheddingStep[];
  /** The lowest offered rate (requests/s) at which a request was shed; null when no step shed. */
  firstShedAtPerSecond: number | null;
}

/** `ticketing_http_requests_shed_total` by reason, as the API's /metrics reports it now. */
async function shedCounters(apiUrl: string): Promise<Record<string, number>> {
  const text = await fetch(`${apiUrl}/metrics`)
    .then((response) => response.text())
    .catch(() => '');
  const counts: Record<string, number> = {};
  for (const match of text.matchAll(/^ticketing_http_requests_shed_total\{reason="([^"]+)"\} (\S+)$/gm)) {
    counts[match[1] ?? '?'] = Number(match[2]);
  }
  return counts;
}

export async function sheddingRamp(
  ctx: BenchContext,
  options: { apiUrl: string; ratesPerSecond: number[]; stepMs: number },
): Promise<SheddingRamp> {
  const path = '/api/v1/events?limit=50';
  const headers = { authorization: `Bearer ${ctx.apiKey}` };
  const steps: SheddingStep[] = [];
  const round = (n: number) => Math.round(n * 10) / 10;
  for (const rate of options.ratesPerSecond) {
    // The sampler judges the last second of the event loop: let the previous step's backlog drain first.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const before = await shedCounters(options.apiUrl);
    const client = new HttpClient(options.apiUrl, 2000);
    const inFlight: Array<Promise<HttpResult>> = [];
    const started = performance.now();
    const count = Math.round((rate * options.stepMs) / 1000);
    for (let index = 0; index < count; index += 1) {
      const due = started + (index * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
      inFlight.push(client.request('GET', path, { headers, timeoutMs: 30_000 }));
    }
    const results = await Promise.all(inFlight);
    const seconds = (performance.now() - started) / 1000;
    client.close();
    const after = await shedCounters(options.apiUrl);
    const served = results.filter((result) => result.status === 200);
    const shed = results.filter((result) => result.status === 503 && errorOf(result).reason === 'overloaded');
    const step: SheddingStep = {
      offeredPerSecond: rate,
      requests: results.length,
      served: served.length,
      servedPerSecond: round(served.length / seconds),
      shed: shed.length,
      shedRatio: Math.round((shed.length / Math.max(1, results.length)) * 1000) / 1000,
      other: results.length - served.length - shed.length,
      servedLatencyMs: summarize(served.map((result) => result.ms)),
      shedLatencyMs: summarize(shed.map((result) => result.ms)),
      retryAfterSeconds: shed[0]?.retryAfter ? Number(shed[0].retryAfter) : null,
      shedByReason: Object.fromEntries(Object.entries(after).map(([reason, n]) => [reason, n - (before[reason] ?? 0)])),
    };
    steps.push(step);
    ctx.log(
      `  ${rate}/s offered: ${step.servedPerSecond} served/s (p99 ${step.servedLatencyMs.p99} ms), ${step.shed} shed (${Math.round(step.shedRatio * 100)} %, p99 ${step.shedLatencyMs.p99} ms), ${step.other} other; API: ${JSON.stringify(step.shedByReason)}`,
    );
  }
  const first = steps.find((step) => step.shed > 0);
  return { path, stepMs: options.stepMs, steps, firstShedAtPerSecond: first?.offeredPerSecond ?? null };
}
