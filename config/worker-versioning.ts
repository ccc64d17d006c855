/**
 * Worker Versioning with Temporal worker deployments (WORKER_VERSIONING=true): each worker process polls as one version
 * (TEMPORAL_DEPLOYMENT_NAME + TEMPORAL_BUILD_ID) of the deployment, and the server routes new executions to the
 * deployment's current version. Pinned executions (checkouts, cancellations, refunds, purchase sessions…) stay on the
 * version they started on until they close; auto-upgrading ones (memberships, settlements) move to the current version
 * on their next workflow task (workflows/versioning-behaviours.ts).
 *
 * What a version's checkout understands is published on the version itself (its metadata, written by its workers at
 * start-up). Whoever starts a checkout (the API, gateway notifications, the reconciler) reads the current version's
 * entry and sends only the input options that version declares, so no checkout input ever names an option its worker
 * does not know; a version that published nothing (or an unreadable deployment) gets the launch baseline, no option.
 */
import type { Client } from '@temporalio/client';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import { defaultPayloadConverter } from '@temporalio/common';
import { CHECKOUT_PATCHES_IN_FORCE } from '../workflows/checkout-patches.js';
import { CHECKOUTS_STARTED_NOW, type CheckoutInput } from '../workflows/definitions.js';
import type { Env } from './env.js';

export type VersioningEnv = Pick<
  Env,
  'WORKER_VERSIONING' | 'TEMPORAL_DEPLOYMENT_NAME' | 'TEMPORAL_BUILD_ID' | 'TEMPORAL_NAMESPACE'
>;

/** The version metadata key under which a version lists the checkout input options its workers know. */
export const CHECKOUT_CAPABILITIES_KEY = 'ticketing.checkout-input';

/** The checkout input options a version knows: boolean flags by name, and the patches it can have from the start. */
export interface CheckoutCapabilities {
  flags: string[];
  patchesInForce: string[];
}

/** The boolean options checkouts opt into, apart from the patch list (none at the launch baseline). */
const CHECKOUT_FLAGS: string[] = Object.keys(CHECKOUTS_STARTED_NOW).filter((key) => key !== 'patchesInForce');

/** What this build's checkout knows: everything it starts checkouts with when versioning is off. */
export const OWN_CHECKOUT_CAPABILITIES: CheckoutCapabilities = {
  flags: [...CHECKOUT_FLAGS],
  patchesInForce: [...CHECKOUT_PATCHES_IN_FORCE],
};

export const deploymentVersionOf = (env: VersioningEnv): WorkerDeploymentVersion => ({
  deploymentName: env.TEMPORAL_DEPLOYMENT_NAME,
  buildId: env.TEMPORAL_BUILD_ID,
});

/**
 * The options of every Worker of the process: with versioning on, they all poll as this version, the activity-only
 * ones too (a pinned execution's activities on the provider and webhook queues go to its own version's workers).
 * Workflows not annotated otherwise are pinned.
 */
export function workerDeploymentOptionsOf(env: VersioningEnv) {
  if (!env.WORKER_VERSIONING) return undefined;
  return {
    version: deploymentVersionOf(env),
    useWorkerVersioning: true as const,
    defaultVersioningBehavior: 'PINNED' as const,
  };
}

/** Decodes a version's published capabilities; null when it published none or something unreadable. */
export function decodeCheckoutCapabilities(
  payload: Parameters<typeof defaultPayloadConverter.fromPayload>[0] | undefined,
): CheckoutCapabilities | null {
  if (!payload) return null;
  try {
    const value = defaultPayloadConverter.fromPayload<Partial<CheckoutCapabilities>>(payload);
    if (!Array.isArray(value?.flags) || !Array.isArray(value.patchesInForce)) return null;
    return { flags: value.flags.map(String), patchesInForce: value.patchesInForce.map(String) };
  } catch {
    return null;
  }
}

/**
 * The checkout input options to send to a version that knows `capabilities`: those this build would send that the
 * version lists. Unknown (null): none, the baseline every version runs.
 */
export function checkoutOptionsFor(capabilities: CheckoutCapabilities | null): Partial<CheckoutInput> {
  if (!capabilities) return {};
  const options: Partial<CheckoutInput> = {};
  for (const flag of CHECKOUT_FLAGS) if (capabilities.flags.includes(flag)) Object.assign(options, { [flag]: true });
  const patches = CHECKOUT_PATCHES_IN_FORCE.filter((id) => capabilities.patchesInForce.includes(id));
  if (patches.length > 0) options.patchesInForce = patches;
  return options;
}

/** The deployment's current version and what its checkout knows; null version while none is current. */
export async function readCurrentVersion(
  client: Client,
  env: VersioningEnv,
): Promise<{ version: WorkerDeploymentVersion | null; capabilities: CheckoutCapabilities | null }> {
  const described = await client.workflowService.describeWorkerDeployment({
    namespace: env.TEMPORAL_NAMESPACE,
    deploymentName: env.TEMPORAL_DEPLOYMENT_NAME,
  });
  const current = described.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion;
  if (!current?.buildId) return { version: null, capabilities: null };
  const version = { deploymentName: current.deploymentName ?? env.TEMPORAL_DEPLOYMENT_NAME, buildId: current.buildId };
  const info = await client.workflowService.describeWorkerDeploymentVersion({
    namespace: env.TEMPORAL_NAMESPACE,
    deploymentVersion: version,
  });
  const entry = info.workerDeploymentVersionInfo?.metadata?.entries?.[CHECKOUT_CAPABILITIES_KEY];
  return { version, capabilities: decodeCheckoutCapabilities(entry ?? undefined) };
}

/** How long a process trusts its last read of the current version's capabilities. */
const CAPABILITIES_TTL_MS = 5_000;
const cached = new WeakMap<Client, { at: number; options: Promise<Partial<CheckoutInput>> }>();

/**
 * The options a checkout started now carries. Versioning off: every option this build knows (all workers run this
 * build or a newer one; deploy workers before the API). Versioning on: those of the deployment's current version,
 * read at most every few seconds; the baseline (none) while that cannot be read. A version switch inside the cache
 * window is harmless: a pinned checkout runs on one version only, and that version ignores, for the execution's whole
 * life, an option it does not know (it is never replayed by a build that knows it).
 */
export async function checkoutStartOptions(client: Client, env: VersioningEnv): Promise<Partial<CheckoutInput>> {
  if (!env.WORKER_VERSIONING) return CHECKOUTS_STARTED_NOW;
  const now = Date.now();
  const hit = cached.get(client);
  if (hit && now - hit.at < CAPABILITIES_TTL_MS) return hit.options;
  const options = readCurrentVersion(client, env).then(
    ({ capabilities }) => checkoutOptionsFor(capabilities),
    () => ({}),
  );
  cached.set(client, { at: now, options });
  return options;
}

/** Forgets the cached capabilities (tests that switch versions and must see it at once). */
export const forgetCheckoutCapabilities = (client: Client): void => {
  cached.delete(client);
};

/** Encodes this build's capabilities for the version metadata. */
export const encodeCheckoutCapabilities = (capabilities: CheckoutCapabilities = OWN_CHECKOUT_CAPABILITIES) =>
  defaultPayloadConverter.toPayload(capabilities);
