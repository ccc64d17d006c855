/**
 * What bounds a phase: CPU seconds per process (from /proc), Postgres backends by wait event (sampled from
 * pg_stat_activity), event-loop lag of API and worker (from bench/lib/probe.ts), peak RSS (VmHWM), and Temporal
 * task latencies read back from workflow histories.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import type pg from 'pg';
import { percentile } from './http.js';

const CLOCK_TICKS = 100;

/**
 * utime + stime of one process, in seconds (0 when it is gone); with `reapedChildren`, plus the time of its children
 * that have exited (cutime + cstime). PostgreSQL needs it: a backend that exits during a phase (a pool closing an idle
 * connection) takes its CPU out of the sum over live backends, and only its parent, the postmaster, keeps it. Without
 * it a phase's PostgreSQL CPU read as low as 0.02 cores and the rest showed up as "other jobs".
 */
function cpuSecondsOf(pid: number, reapedChildren = false): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const own = Number(fields[11]) + Number(fields[12]);
    const children = reapedChildren ? Number(fields[13]) + Number(fields[14]) : 0;
    return (own + children) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

function commOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

/** Every pid whose command name matches (postgres backends, redis-server). */
function pidsNamed(pattern: RegExp): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => pattern.test(commOf(pid)));
}

/** VmHWM (peak resident set) and VmRSS of a process, in MB; null when it is gone. */
export function memoryOf(pid: number | undefined): { peakMb: number; rssMb: number } | null {
  if (!pid || !existsSync(`/proc/${pid}/status`)) return null;
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  return { peakMb: Math.round(kb('VmHWM') / 1024), rssMb: Math.round(kb('VmRSS') / 1024) };
}

export interface CpuSnapshot {
  at: number;
  seconds: Record<string, number>;
}

/** Busy CPU seconds of the whole machine (all cores, everything but idle and iowait) and steal. */
function machineSeconds(): { busy: number; steal: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = line
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return { busy: (user + nice + system + irq + softirq) / CLOCK_TICKS, steal: steal / CLOCK_TICKS };
}

/**
 * CPU seconds so far of the named processes, plus every postgres and redis process, plus the whole machine: the
 * difference (`others`) is load this benchmark did not generate — other jobs sharing the box skew the figures.
 */
export function cpuSnapshot(pids: Record<string, number | undefined>): CpuSnapshot {
  const seconds: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) seconds[name] = pid ? cpuSecondsOf(pid) : 0;
  seconds.postgres = pidsNamed(/^postgres/).reduce((sum, pid) => sum + cpuSecondsOf(pid, true), 0);
  seconds.redis = pidsNamed(/^redis-server/).reduce((sum, pid) => sum + cpuSecondsOf(pid), 0);
  const machine = machineSeconds();
  seconds.machine = machine.busy;
  seconds.steal = machine.steal;
  return { at: Date.now(), seconds };
}

/** Share of one core each process used between two snapshots (1.0 = one full core; the machine has 2). */
export function cpuBetween(before: CpuSnapshot, after: CpuSnapshot): Record<string, number> {
  const wall = Math.max(0.001, (after.at - before.at) / 1000);
  const shares: Record<string, number> = {};
  let total = 0;
  for (const [name, value] of Object.entries(after.seconds)) {
    const share = Math.max(0, value - (before.seconds[name] ?? 0)) / wall;
    shares[name] = Math.round(share * 100) / 100;
    if (name !== 'machine' && name !== 'steal') total += share;
  }
  shares.total = Math.round(total * 100) / 100;
  shares.others = Math.round(Math.max(0, (shares.machine ?? 0) - total) * 100) / 100;
  return shares;
}

/**
 * The kernel's count of connections refused at a full accept queue (TcpExt ListenOverflows) and of SYNs dropped for
 * any reason at a listener (ListenDrops), machine-wide: on a box running only the bench's stack, the API's. A
 * dropped SYN is retried by the client's kernel 1, 3, 7, 15 and 31 s later, which a latency percentile shows but does
 * not explain.
 */
export function listenQueueCounters(): { overflows: number; drops: number } {
  const lines = readFileSync('/proc/net/netstat', 'utf8').split('\n');
  const header = lines.findIndex((line) => line.startsWith('TcpExt:'));
  const names = lines[header]?.split(/\s+/) ?? [];
  const values = lines[header + 1]?.split(/\s+/) ?? [];
  const counter = (name: string) => Number(values[names.indexOf(name)] ?? 0);
  return { overflows: counter('ListenOverflows'), drops: counter('ListenDrops') };
}

export interface PgWaitSampler {
  stop(): Promise<PgWaitSummary>;
}

export interface PgWaitSummary {
  samples: number;
  /** Mean number of backends of the bench database that were active (running a statement). */
  meanActive: number;
  /** Mean number of those waiting, per wait event type (Lock = row/transaction locks, LWLock, IO, Client…). */
  meanWaiting: Record<string, number>;
  /** The most frequent wait events (Lock:tuple = row-lock queue, Lock:transactionid = waiting for another xact…). */
  meanWaitingByEvent: Record<string, number>;
  /** Share of active backend-samples that were waiting on a heavyweight lock. */
  lockWaitShare: number;
}

/** Samples pg_stat_activity of one database every `everyMs` until stopped. */
export function samplePgWaits(pool: pg.Pool, database: string, everyMs = 200): PgWaitSampler {
  let samples = 0;
  let active = 0;
  const waiting: Record<string, number> = {};
  const detail: Record<string, number> = {};
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const rows = await pool.query<{ wait: string | null; event: string | null; n: string }>(
          `select wait_event_type as wait, wait_event as event, count(*) as n from pg_stat_activity
            where datname = $1 and state = 'active' and pid <> pg_backend_pid() group by 1, 2`,
          [database],
        );
        samples += 1;
        for (const row of rows.rows) {
          const n = Number(row.n);
          active += n;
          if (row.wait) {
            waiting[row.wait] = (waiting[row.wait] ?? 0) + n;
            const key = `${row.wait}:${row.event}`;
            detail[key] = (detail[key] ?? 0) + n;
          }
        }
      } catch {
        // A sample lost to a busy pool is not worth failing the benchmark.
      }
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      const mean = (n: number) => Math.round((n / Math.max(1, samples)) * 100) / 100;
      return {
        samples,
        meanActive: mean(active),
        meanWaiting: Object.fromEntries(Object.entries(waiting).map(([k, v]) => [k, mean(v)])),
        meanWaitingByEvent: Object.fromEntries(
          Object.entries(detail)
            .sort((a, b) => b[1] - a[1])
            .slice(0, 6)
            .map(([k, v]) => [k, mean(v)]),
        ),
        lockWaitShare: Math.round(((waiting.Lock ?? 0) / Math.max(1, active)) * 1000) / 1000,
      };
    },
  };
}

export interface LoopLagSummary {
  seconds: number;
  lagP99Max: number;
  lagP99Mean: number;
  lagMax: number;
  eluMean: number;
  eluMax: number;
}

/** Aggregates the probe's per-second lines of one thread ('main', or 'workers' for all others) in [from, to]. */
export function loopLag(
  file: string,
  from: number,
  to: number,
  thread: 'main' | 'workers' = 'main',
): LoopLagSummary | null {
  if (!existsSync(file)) return null;
  const lines = readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { at: number; thread?: string; lagP99: number; lagMax: number; elu: number })
    .filter((line) => line.at >= from && line.at <= to + 1000)
    .filter((line) => ((line.thread ?? 'main') === 'main') === (thread === 'main'));
  if (lines.length === 0) return null;
  const round = (n: number) => Math.round(n * 100) / 100;
  return {
    seconds: lines.length,
    lagP99Max: round(Math.max(...lines.map((l) => l.lagP99))),
    lagP99Mean: round(lines.reduce((s, l) => s + l.lagP99, 0) / lines.length),
    lagMax: round(Math.max(...lines.map((l) => l.lagMax))),
    eluMean: round(lines.reduce((s, l) => s + l.elu, 0) / lines.length),
    eluMax: round(Math.max(...lines.map((l) => l.elu))),
  };
}

export interface TaskLatency {
  workflows: number;
  /** Workflow task scheduled → picked up by the worker (queueing: worker or server saturated). */
  workflowTaskScheduleToStart: { p50: number; p95: number };
  /** Workflow task picked up → completed (the worker running workflow code). */
  workflowTaskRun: { p50: number; p95: number };
  /** Activity scheduled → picked up (queueing for an activity slot). */
  activityScheduleToStart: { p50: number; p95: number };
  /** Activity picked up → completed (Postgres / gateway time as the worker saw it). */
  activityRun: { p50: number; p95: number };
  /** First event → first activity completed (the reserve update's whole server-side path). */
  firstActivityDone: { p50: number; p95: number };
  /** From the workflow's start to the reserve update's completion (the reservation answered). */
  reserveUpdateDone: { p50: number; p95: number };
}

type HistoryEvent = {
  eventType?: number | null;
  eventTime?: { seconds?: unknown; nanos?: number | null } | null;
  eventId?: unknown;
  workflowTaskStartedEventAttributes?: { scheduledEventId?: unknown } | null;
  workflowTaskCompletedEventAttributes?: { startedEventId?: unknown } | null;
  activityTaskStartedEventAttributes?: { scheduledEventId?: unknown } | null;
  activityTaskCompletedEventAttributes?: { startedEventId?: unknown } | null;
};

const msOf = (event: HistoryEvent): number =>
  Number(event.eventTime?.seconds ?? 0) * 1000 + (event.eventTime?.nanos ?? 0) / 1e6;

/** Reads the histories of a sample of workflows and measures where their time went. */
export async function temporalTaskLatency(client: Client, workflowIds: string[]): Promise<TaskLatency> {
  const T = proto.temporal.api.enums.v1.EventType;
  const wfSts: number[] = [];
  const wfRun: number[] = [];
  const actSts: number[] = [];
  const actRun: number[] = [];
  const firstAct: number[] = [];
  const updateDone: number[] = [];
  for (const id of workflowIds) {
    let history: { events?: HistoryEvent[] | null };
    try {
      history = (await client.workflow.getHandle(id).fetchHistory()) as { events?: HistoryEvent[] | null };
    } catch {
      continue;
    }
    const events = history.events ?? [];
    const byId = new Map(events.map((event) => [Number(event.eventId), event]));
    const first = events[0];
    let firstActivitySeen = false;
    let updateSeen = false;
    for (const event of events) {
      if (!updateSeen && first && event.eventType === T.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED) {
        updateSeen = true;
        updateDone.push(msOf(event) - msOf(first));
      }
      if (event.eventType === T.EVENT_TYPE_WORKFLOW_TASK_STARTED) {
        const scheduled = byId.get(Number(event.workflowTaskStartedEventAttributes?.scheduledEventId));
        if (scheduled) wfSts.push(msOf(event) - msOf(scheduled));
      } else if (event.eventType === T.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) {
        const started = byId.get(Number(event.workflowTaskCompletedEventAttributes?.startedEventId));
        if (started) wfRun.push(msOf(event) - msOf(started));
      } else if (event.eventType === T.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
        const scheduled = byId.get(Number(event.activityTaskStartedEventAttributes?.scheduledEventId));
        if (scheduled) actSts.push(msOf(event) - msOf(scheduled));
      } else if (event.eventType === T.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
        const started = byId.get(Number(event.activityTaskCompletedEventAttributes?.startedEventId));
        if (started) actRun.push(msOf(event) - msOf(started));
        if (!firstActivitySeen && first) {
          firstActivitySeen = true;
          firstAct.push(msOf(event) - msOf(first));
        }
      }
    }
  }
  const pair = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    return { p50: Math.round(percentile(sorted, 50)), p95: Math.round(percentile(sorted, 95)) };
  };
  return {
    workflows: workflowIds.length,
    workflowTaskScheduleToStart: pair(wfSts),
    workflowTaskRun: pair(wfRun),
    activityScheduleToStart: pair(actSts),
    activityRun: pair(actRun),
    firstActivityDone: pair(firstAct),
    reserveUpdateDone: pair(updateDone),
  };
}

export interface PurchaseCost {
  /** Checkout executions of paid sales read (after they completed, or 30 s). */
  purchases: number;
  workflowTasks: { p50: number; max: number; mean: number };
  taskQueueActivities: { p50: number; max: number; mean: number };
  historyEvents: { p50: number; max: number };
  /** Task-queue activities by type, summed over the sample. */
  activityTypes: Record<string, number>;
}

/**
 * What each purchase cost the orchestration, counted from its checkout's history (issue 14's budget: at most 4
 * workflow tasks and 2 task-queue activities per card purchase).
 */
export async function purchaseCost(client: Client, workflowIds: string[]): Promise<PurchaseCost> {
  const T = proto.temporal.api.enums.v1.EventType;
  const waitUntil = Date.now() + 30_000;
  const tasks: number[] = [];
  const activities: number[] = [];
  const sizes: number[] = [];
  const types: Record<string, number> = {};
  for (const id of workflowIds) {
    const handle = client.workflow.getHandle(id);
    try {
      while (Date.now() < waitUntil && (await handle.describe()).status.name === 'RUNNING') {
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const events = ((await handle.fetchHistory()).events ?? []) as Array<
        HistoryEvent & {
          activityTaskScheduledEventAttributes?: { activityType?: { name?: string | null } | null } | null;
        }
      >;
      sizes.push(events.length);
      tasks.push(events.filter((event) => event.eventType === T.EVENT_TYPE_WORKFLOW_TASK_COMPLETED).length);
      const scheduled = events.filter((event) => event.eventType === T.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
      activities.push(scheduled.length);
      for (const event of scheduled) {
        const name = event.activityTaskScheduledEventAttributes?.activityType?.name ?? 'unknown';
        types[name] = (types[name] ?? 0) + 1;
      }
    } catch {}
  }
  const stats = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    const mean = values.length === 0 ? 0 : values.reduce((sum, value) => sum + value, 0) / values.length;
    return { p50: percentile(sorted, 50), max: sorted[sorted.length - 1] ?? 0, mean: Math.round(mean * 100) / 100 };
  };
  const size = stats(sizes);
  return {
    purchases: tasks.length,
    workflowTasks: stats(tasks),
    taskQueueActivities: stats(activities),
    historyEvents: { p50: size.p50, max: size.max },
    activityTypes: types,
  };
}
