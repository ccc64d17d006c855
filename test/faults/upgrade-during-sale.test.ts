/**
 * An upgrade during a sale (issue 33), with Worker Versioning on: a flash sale runs on version 1 workers (build id v1,
 * made current by the first worker of the deployment). While checkouts, a membership renewal and an event cancellation
 * are in flight, version 2 workers start (build id v2) and the operator makes v2 current (the call
 * `temporal worker deployment set-current-version` makes). Version 1 keeps serving the executions pinned to it until
 * none runs, then it is stopped. Every checkout ends as it should (confirmed, or released/expired unpaid; the
 * cancelled event's sales refunded), the membership's renewal is applied on v2, and no execution of the task queue is
 * Failed, Terminated or TimedOut.
 *
 * Version 2 is a real release: this commit's workflows with one change to the checkout that no v1 history replays (it
 * records the release in its memo before anything else, an extra command at its first workflow task, not behind
 * `patched()`). A v1 checkout that moved to v2 would fail on replay with a nondeterminism error; pinned, none does, and
 * the memo tells which code ran each checkout. The cluster is the one the production profile runs: the Temporal server
 * on PostgreSQL (persistence and visibility), not the dev server.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { seedPaidSales } from '../../bench/lib/cancellation-seed.js';
import { providerUrls } from '../../config/env.js';
import { GatewayAClient } from '../../integrations/gateway-a/client.js';
import type { ManagedProcess } from '../../scripts/support/processes.js';
import { checkoutWorkflowId } from '../../workflows/definitions.js';
import { eventCancellationWorkflowId } from '../../workflows/event-cancellation-definitions.js';
import { membershipWorkflowId } from '../../workflows/membership-definitions.js';
import { bearer, createOrganizer, type Organizer } from '../support/fixtures.js';
import { confirmAtBank, eventually, publishEvent, session, signInBuyer } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';
import {
  describeOutcomes,
  type FaultStack,
  faultLog,
  publishFaultEvent,
  runScenario,
  startCrowd,
  startFaultStack,
  statusesOf,
  unfinishedPurchases,
  until,
} from './harness.js';

const WINDOW_MS = 60_000;
const DEPLOYMENT = `upgrade-${randomUUID().slice(0, 8)}`;
const log = faultLog('upgrade-during-sale');
/** Settings of the stack's API and workers, and of this file's in-process API (memberships, the cancellation). */
const SETTINGS = {
  WORKER_VERSIONING: 'true',
  TEMPORAL_DEPLOYMENT_NAME: DEPLOYMENT,
  // A closed checkout listens for late money this long: v1 drains once its last checkouts have closed.
  LATE_PAYMENT_GRACE_MS: '20000',
  // The cancelled event's refunds take seconds, so the cancellation is still running at the switch.
  PROVIDER_ACTIVITIES_PER_SECOND: '4',
  EVENT_CANCELLATION_FINAL_SWEEP_MS: '1000',
  // A period long enough to outlast the scenario; its renewal is asked 20 s in.
  MEMBERSHIP_PERIOD_MS: String(10 * 60_000),
  MEMBERSHIP_RENEWAL_NOTICE_MS: String(10 * 60_000 - 20_000),
  MEMBERSHIP_PAYMENT_POLL_MS: '2000',
};
const CANCELLED_SALES = 24;
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const V2_ROOT = join(ROOT, '.dev', `upgrade-v2-${randomUUID().slice(0, 8)}`);

/**
 * Builds version 2's workflow bundle from a copy of this commit's workflows whose checkout first records
 * `{ release: 'v2' }` in its memo. The copy imports the repository's activities, domain and entities (symlinks).
 */
function buildVersion2Bundle(): string {
  mkdirSync(V2_ROOT, { recursive: true });
  cpSync(join(ROOT, 'workflows'), join(V2_ROOT, 'workflows'), { recursive: true });
  for (const directory of ['activities', 'domain', 'entities']) {
    symlinkSync(join(ROOT, directory), join(V2_ROOT, directory));
  }
  const entry = join(V2_ROOT, 'workflows', 'index.ts');
  const source = readFileSync(entry, 'utf8');
  const original = "import { checkout } from './checkout.js';\n";
  expect(source).toContain(original);
  writeFileSync(
    entry,
    source.replace(
      original,
      [
        "import { upsertMemo } from '@temporalio/workflow';",
        "import { checkout as checkoutOfV1 } from './checkout.js';",
        'async function checkout(...args: Parameters<typeof checkoutOfV1>) {',
        "  upsertMemo({ release: 'v2' });",
        '  return checkoutOfV1(...args);',
        '}',
        '',
      ].join('\n'),
    ),
  );
  const bundle = join(V2_ROOT, 'workflow-bundle.js');
  execFileSync(process.execPath, ['--import', 'tsx', join(ROOT, 'worker', 'build-workflow-bundle.ts'), bundle, entry], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  return bundle;
}

let stack: FaultStack | undefined;
let api: TestApi | undefined;
let organizer: Organizer;
let pool: pg.Pool;
let v2: ManagedProcess | undefined;

beforeAll(async () => {
  stack = await startFaultStack('upgrade', {
    paymentWindowMs: WINDOW_MS,
    temporalOnPostgres: true,
    env: { ...SETTINGS, TEMPORAL_BUILD_ID: 'v1' },
  });
  api = await startTestApi({
    ...SETTINGS,
    TEMPORAL_BUILD_ID: 'v1',
    TEMPORAL_TASK_QUEUE: stack.env.TEMPORAL_TASK_QUEUE,
    TEMPORAL_ADDRESS: stack.env.TEMPORAL_ADDRESS,
    RECONCILER_ENABLED: 'false',
  });
  organizer = await createOrganizer(api.orm.em.fork());
  pool = new pg.Pool({ connectionString: api.env.DATABASE_URL, max: 3 });
}, 200_000);
afterAll(async () => {
  await pool?.end();
  await api?.close();
  await stack?.stop();
  rmSync(V2_ROOT, { recursive: true, force: true });
}, 60_000);

// ------------------------------------------------------------------------------------------------ the deployment

const temporal = () => api!.services.temporal;
const namespace = () => api!.env.TEMPORAL_NAMESPACE;

async function currentBuildId(): Promise<string | null> {
  const described = await temporal().workflowService.describeWorkerDeployment({
    namespace: namespace(),
    deploymentName: DEPLOYMENT,
  });
  return described.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId ?? null;
}

/** True once the version's workers have polled (the server knows the version). */
const versionKnown = (buildId: string) =>
  temporal()
    .workflowService.describeWorkerDeploymentVersion({
      namespace: namespace(),
      deploymentVersion: { deploymentName: DEPLOYMENT, buildId },
    })
    .then(
      (described) => (described.workerDeploymentVersionInfo?.taskQueueInfos?.length ?? 0) > 0,
      () => false,
    );

/** What the operator does: `temporal worker deployment set-current-version --deployment-name … --build-id v2`. */
async function setCurrent(buildId: string): Promise<void> {
  const described = await temporal().workflowService.describeWorkerDeployment({
    namespace: namespace(),
    deploymentName: DEPLOYMENT,
  });
  await temporal().workflowService.setWorkerDeploymentCurrentVersion({
    namespace: namespace(),
    deploymentName: DEPLOYMENT,
    buildId,
    conflictToken: described.conflictToken,
    identity: 'upgrade-during-sale test',
  });
}

interface ExecutionVersion {
  workflowId: string;
  status: string;
  buildId: string | null;
  behavior: string | null;
}

/** Every execution of the stack's task queue, with the version it last ran on and its versioning behaviour. */
async function executionsOfQueue(): Promise<ExecutionVersion[]> {
  const found: ExecutionVersion[] = [];
  for await (const execution of temporal().workflow.list({
    query: `TaskQueue = '${stack!.env.TEMPORAL_TASK_QUEUE}'`,
  })) {
    const info = (await temporal().workflow.getHandle(execution.workflowId, execution.runId).describe()).raw
      .workflowExecutionInfo?.versioningInfo;
    found.push({
      workflowId: execution.workflowId,
      status: execution.status.name,
      buildId: info?.deploymentVersion?.buildId ?? null,
      behavior: info?.behavior === 1 ? 'PINNED' : info?.behavior === 2 ? 'AUTO_UPGRADE' : null,
    });
  }
  return found;
}

/** The drain check docs/deployment.md gives the operator: executions still running on the version, by visibility. */
const runningOnVersion = (buildId: string) =>
  temporal()
    .workflow.count(`TemporalWorkerDeploymentVersion = '${DEPLOYMENT}:${buildId}' AND ExecutionStatus = 'Running'`)
    .then((counted) => counted.count);

/** Executions still running that are pinned to `buildId`: the version is drained when there are none. */
async function pinnedRunning(buildId: string): Promise<string[]> {
  return (await executionsOfQueue())
    .filter((each) => each.status === 'RUNNING' && each.behavior === 'PINNED' && each.buildId === buildId)
    .map((each) => each.workflowId);
}

// ------------------------------------------------------------------------------------------------ the member

const unique = () => Math.random().toString(36).slice(2, 8);

interface MembershipView {
  status: string;
  renewalState: string;
  periodNumber: number;
  payment: { reference: string; checkoutUrl: string | null; periodNumber: number } | null;
}

async function membershipOf(token: string): Promise<MembershipView | null> {
  const response = await api!.request({
    method: 'GET',
    url: `/api/v1/customer/membership?workspaceId=${organizer.workspaceId}`,
    headers: session(token),
  });
  expect(response.statusCode).toBe(200);
  return response.json().data;
}

async function settleAtBank(checkoutUrl: string, email: string, reference: string): Promise<void> {
  expect((await confirmAtBank(checkoutUrl, email)).status).toBe(302);
  const settled = await fetch(`${api!.env.SANDBOX_URL}/control/gateway-a/pse/settle`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ reference, outcome: 'approved' }),
  });
  expect(settled.status).toBe(200);
}

/** A member whose signup is paid (period 1 ACTIVE), on v1. */
async function activeMember() {
  const email = `upgrade-${unique()}@buyers.test`;
  const token = await signInBuyer(api!, email);
  const me = await api!.request({ method: 'GET', url: '/api/v1/customer/me', headers: session(token) });
  const workflowId = membershipWorkflowId(organizer.workspaceId, me.json().data.id);
  const plan = await api!.request({
    method: 'POST',
    url: '/api/v1/membership-plans',
    headers: bearer(organizer.key),
    payload: { name: `Upgrade ${unique()}`, price: 25_000, period: 'MONTHLY' },
  });
  expect(plan.statusCode).toBe(201);
  const created = await api!.request({
    method: 'POST',
    url: '/api/v1/customer/subscriptions',
    headers: session(token),
    payload: { planId: plan.json().data.id },
  });
  expect(created.statusCode).toBe(201);
  const pending = await membershipOf(token);
  await settleAtBank(created.json().data.checkoutUrl, email, pending!.payment!.reference);
  await eventually(
    () => membershipOf(token),
    (m) => m?.status === 'ACTIVE',
    60_000,
  );
  return { email, token, workflowId };
}

// ------------------------------------------------------------------------------------------------ the scenario

test('v2 is deployed and made current mid-sale, v1 drained and stopped: every checkout ends as it should, the membership continues on v2', async () => {
  const current = stack!;
  expect(await currentBuildId()).toBe('v1');

  const member = await activeMember();
  log(`member active: ${member.workflowId}`);

  // The event that will be cancelled mid-upgrade: paid sales seeded straight into the database and the gateway.
  const doomed = await publishEvent(api!, organizer, { capacity: CANCELLED_SALES, price: 40_000 });
  const gatewayA = new GatewayAClient({
    baseUrl: providerUrls(api!.env).gatewayA,
    accessToken: api!.env.GATEWAY_A_ACCESS_TOKEN,
  });
  const seeded = await seedPaidSales({
    query: async (sql, params) => (await pool.query(sql, params)).rows,
    gatewayA,
    event: doomed,
    count: CANCELLED_SALES,
    price: 40_000,
  });

  // v2 starts beside v1 and polls; nothing goes to it until it is made current. The member's renewal is requested.
  v2 = await current.startExtraWorker('v2', { TEMPORAL_BUILD_ID: 'v2', WORKFLOW_BUNDLE_PATH: buildVersion2Bundle() });
  await until('v2 workers polling', () => versionKnown('v2'), 120_000);
  const due = await eventually(
    () => membershipOf(member.token),
    (m) => m?.payment?.periodNumber === 2 && Boolean(m.payment.checkoutUrl),
    60_000,
  );

  let switchedAt = 0;
  const result = await runScenario(current, {
    buyers: 24,
    capacity: 18,
    paymentWindowMs: WINDOW_MS,
    releaseAll: true,
    log,
    inject: async () => {
      // In flight at the switch: buyers reserving and paying, the member's renewal request, the event's mass refund.
      const cancelled = await api!.request({
        method: 'POST',
        url: `/api/v1/events/${doomed.eventId}/cancel`,
        headers: bearer(organizer.key),
        payload: { reason: 'upgrade test' },
      });
      expect(cancelled.statusCode).toBe(200);
      // Listed through visibility, which on PostgreSQL records a new execution a moment after it starts.
      let pinnedToV1: string[] = [];
      await until(
        'the cancellation and checkouts listed as pinned to v1',
        async () => {
          pinnedToV1 = await pinnedRunning('v1');
          return (
            pinnedToV1.includes(eventCancellationWorkflowId(doomed.eventId)) &&
            pinnedToV1.some((id) => id.startsWith('checkout/'))
          );
        },
        30_000,
      );
      log(`v2 polling; pinned to v1 and running: ${pinnedToV1.length}`);
      // The documented visibility query sees them too (eventually: visibility lags the executions a little).
      await until('the visibility query sees v1 running', async () => (await runningOnVersion('v1')) > 0, 30_000);
      await setCurrent('v2');
      switchedAt = Date.now();
      expect(await currentBuildId()).toBe('v2');
      log('v2 is current');

      // The member pays the renewal requested on v1; the membership applies it on v2.
      await settleAtBank(due!.payment!.checkoutUrl!, member.email, due!.payment!.reference);
    },
  });
  log(`scenario done in ${result.totalMs} ms: ${JSON.stringify(result.report.byStatus)}`);
  expect({ violations: result.report.violations, outcomes: describeOutcomes(result) }).toMatchObject({
    violations: [],
  });
  expect(result.report.byStatus.PENDING ?? 0).toBe(0);
  expect(result.payers.length).toBeGreaterThan(0);
  expect(unfinishedPurchases(result)).toEqual([]);

  // The renewal is applied by v2: the membership (auto-upgrade) left v1 at the switch.
  await eventually(
    () => membershipOf(member.token),
    (m) => m?.renewalState === 'PAID',
    90_000,
  );
  const membership = (await executionsOfQueue()).find((each) => each.workflowId === member.workflowId);
  expect(membership).toMatchObject({ status: 'RUNNING', buildId: 'v2', behavior: 'AUTO_UPGRADE' });

  // The cancelled event: every seeded sale refunded, by the cancellation pinned to v1.
  await eventually(
    async () =>
      (
        await api!.request({ method: 'GET', url: `/api/v1/events/${doomed.eventId}`, headers: bearer(organizer.key) })
      ).json().data,
    (event) => event.cancellation?.state === 'DONE',
    180_000,
  );
  const { rows: refunded } = await pool.query<{ n: number }>(
    "select count(*)::int as n from sales where id = any($1::uuid[]) and status = 'REFUNDED'",
    [seeded.map((sale) => sale.saleId)],
  );
  expect(refunded[0]?.n).toBe(CANCELLED_SALES);
  // DONE is written before the run's last sweep; the run itself ends on v1, where it started.
  await temporal().workflow.getHandle(eventCancellationWorkflowId(doomed.eventId)).result();
  // Visibility on PostgreSQL records the close a moment after the result.
  let cancellation: ExecutionVersion | undefined;
  await until(
    'the cancellation listed as closed',
    async () => {
      cancellation = (await executionsOfQueue()).find(
        (each) => each.workflowId === eventCancellationWorkflowId(doomed.eventId),
      );
      return cancellation?.status !== 'RUNNING';
    },
    30_000,
  );
  expect(cancellation).toMatchObject({ status: 'COMPLETED', buildId: 'v1', behavior: 'PINNED' });

  // Checkouts ran where they started: some on v1 (pinned through the switch), the rest on v2, never both.
  const checkouts = (await executionsOfQueue()).filter((each) => each.workflowId.startsWith('checkout/'));
  const byVersion = {
    v1: checkouts.filter((c) => c.buildId === 'v1').length,
    v2: checkouts.filter((c) => c.buildId === 'v2').length,
  };
  log(`checkouts by version: ${JSON.stringify(byVersion)}`);
  expect(byVersion.v1).toBeGreaterThan(0);
  expect(checkouts.every((c) => c.behavior === 'PINNED')).toBe(true);
  // The memo says which code ran each checkout: v2's change only where v2 ran it, never on a checkout v1 started.
  for (const each of checkouts) {
    const memo = (await temporal().workflow.getHandle(each.workflowId).describe()).memo ?? {};
    expect({ workflowId: each.workflowId, buildId: each.buildId, release: memo.release ?? null }).toEqual({
      workflowId: each.workflowId,
      buildId: each.buildId,
      release: each.buildId === 'v2' ? 'v2' : null,
    });
  }

  // Drain v1: it serves its pinned executions until none runs, then it is stopped.
  await until(
    'v1 drained (no running execution pinned to it)',
    async () => (await pinnedRunning('v1')).length === 0,
    240_000,
  );
  log(`v1 drained ${Date.now() - switchedAt} ms after the switch; stopping it`);
  await until('the visibility query agrees', async () => (await runningOnVersion('v1')) === 0, 30_000);
  await current.worker.stop('SIGTERM', 15_000);

  // v2 alone serves the sale now: new buyers reserve, pay or release, and their checkouts run on v2.
  const later = await startCrowd(current, await publishFaultEvent(current, 6), {
    count: 6,
    budgetMs: 90_000,
    releaseAll: true,
  });
  const laterOutcomes = await later.outcomes;
  const laterIds = laterOutcomes.map((o) => o.saleId).filter((id): id is string => id !== null);
  expect(laterIds.length).toBeGreaterThan(0);
  expect(laterOutcomes.filter((o) => o.pays && o.saleId !== null).map((o) => o.outcome)).not.toContain('unavailable');
  const laterStatuses = await statusesOf(current, laterIds);
  expect([...laterStatuses.values()].filter((status) => status === 'PENDING')).toEqual([]);
  const onV2 = (await executionsOfQueue()).filter((each) =>
    laterIds.some((id) => each.workflowId === checkoutWorkflowId(id)),
  );
  expect(onV2.map((each) => each.buildId)).toEqual(laterIds.map(() => 'v2'));
  for (const each of onV2) {
    expect((await temporal().workflow.getHandle(each.workflowId).describe()).memo?.release).toBe('v2');
  }
  expect(v2?.child.exitCode ?? null).toBeNull();
  const ids = [...result.outcomes.map((o) => o.saleId).filter((id): id is string => id !== null), ...laterIds];

  // Nothing failed, was terminated or timed out, on either version.
  const everything = await executionsOfQueue();
  const broken = everything.filter((each) => ['FAILED', 'TERMINATED', 'TIMED_OUT'].includes(each.status));
  expect(broken).toEqual([]);
  for (const saleId of ids) {
    const status = everything.find((each) => each.workflowId === checkoutWorkflowId(saleId))?.status;
    expect({ saleId, status }).toMatchObject({ saleId, status: expect.stringMatching(/^(COMPLETED|RUNNING)$/) });
  }
}, 900_000);
