/**
 * What a versioned worker (WORKER_VERSIONING=true) tells the server about its version once it polls: the checkout input
 * options its build knows (version metadata, read by whoever starts checkouts: config/worker-versioning.ts) and, for a
 * deployment with no current version yet, that this version is current (TEMPORAL_DEPLOYMENT_ADOPT_FIRST_VERSION).
 */
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Env } from '../config/env.js';
import {
  CHECKOUT_CAPABILITIES_KEY,
  deploymentVersionOf,
  encodeCheckoutCapabilities,
  type VersioningEnv,
} from '../config/worker-versioning.js';

const RETRY_MS = 1_000;
/** The version exists on the server only once its pollers reached it: asks until then, within this bound. */
const ANNOUNCE_WITHIN_MS = 120_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function retrying<T>(what: string, attempt: () => Promise<T>, logger: Logger, stopped: () => boolean) {
  const deadline = Date.now() + ANNOUNCE_WITHIN_MS;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (stopped() || Date.now() > deadline) throw error;
      logger.debug({ err: error, what }, 'deployment version not ready; asking again');
      await sleep(RETRY_MS);
    }
  }
}

export async function announceDeploymentVersion(options: {
  client: Client;
  env: VersioningEnv & Pick<Env, 'TEMPORAL_DEPLOYMENT_ADOPT_FIRST_VERSION'>;
  logger: Logger;
  /** True once the workers stopped: the announcement gives up. */
  stopped: () => boolean;
}): Promise<void> {
  const { client, env, logger, stopped } = options;
  if (!env.WORKER_VERSIONING) return;
  const version = deploymentVersionOf(env);
  const service = client.workflowService;
  await retrying(
    'publish checkout capabilities',
    () =>
      service.updateWorkerDeploymentVersionMetadata({
        namespace: env.TEMPORAL_NAMESPACE,
        deploymentVersion: version,
        upsertEntries: { [CHECKOUT_CAPABILITIES_KEY]: encodeCheckoutCapabilities() },
        identity: `worker ${version.buildId}`,
      }),
    logger,
    stopped,
  );
  if (!env.TEMPORAL_DEPLOYMENT_ADOPT_FIRST_VERSION) return;
  const described = await service.describeWorkerDeployment({
    namespace: env.TEMPORAL_NAMESPACE,
    deploymentName: version.deploymentName,
  });
  const current = described.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion;
  if (current?.buildId) {
    logger.info({ current: current.buildId, own: version.buildId }, 'deployment has a current version');
    return;
  }
  // The conflict token makes this a no-op if another replica (or the operator) set a version in the meantime.
  await service.setWorkerDeploymentCurrentVersion({
    namespace: env.TEMPORAL_NAMESPACE,
    deploymentName: version.deploymentName,
    buildId: version.buildId,
    conflictToken: described.conflictToken,
    identity: `worker ${version.buildId}`,
  });
  logger.info(
    { deployment: version.deploymentName, buildId: version.buildId },
    'first version of the deployment made current',
  );
}
