/**
 * Under Worker Versioning a checkout runs on the version it started on, so whoever starts one sends only the input
 * options that version published (config/worker-versioning.ts): never one its worker does not know.
 */
import {
  checkoutOptionsFor,
  checkoutStartOptions,
  decodeCheckoutCapabilities,
  encodeCheckoutCapabilities,
  OWN_CHECKOUT_CAPABILITIES,
  workerDeploymentOptionsOf,
} from '../../config/worker-versioning.js';
import { CHECKOUTS_STARTED_NOW } from '../../workflows/definitions.js';
import { VERSIONING_BEHAVIOURS } from '../../workflows/versioning-behaviours.js';

const versioning = {
  WORKER_VERSIONING: true,
  TEMPORAL_DEPLOYMENT_NAME: 'ticketing',
  TEMPORAL_BUILD_ID: 'v7',
  TEMPORAL_NAMESPACE: 'default',
};

test('a version that published this build’s capabilities gets every option checkouts start with today', () => {
  const published = decodeCheckoutCapabilities(encodeCheckoutCapabilities(OWN_CHECKOUT_CAPABILITIES));
  expect(checkoutOptionsFor(published)).toEqual(CHECKOUTS_STARTED_NOW);
});

test('a version from before the launch baseline gets none of the development-era options it lists', () => {
  const older = {
    flags: ['ticketsByMailer', 'stepsTakeTurns', 'leanCardPurchase'],
    patchesInForce: ['checkout-v2-money-never-stranded', 'checkout-owed-ask-retry'],
  };
  expect(checkoutOptionsFor(older)).toEqual({});
});

test('a version that published nothing (or something unreadable) gets the baseline: no option at all', () => {
  expect(checkoutOptionsFor(null)).toEqual({});
  expect(decodeCheckoutCapabilities(undefined)).toBeNull();
  expect(decodeCheckoutCapabilities(encodeCheckoutCapabilities({ flags: 'all' } as never))).toBeNull();
  // Options a future build knows and this one does not are never sent either.
  expect(checkoutOptionsFor({ flags: ['fromTheFuture'], patchesInForce: ['checkout-from-the-future'] })).toEqual({});
});

test('versioning off: today’s options, and the workers poll unversioned', async () => {
  const off = { ...versioning, WORKER_VERSIONING: false };
  expect(await checkoutStartOptions({} as never, off)).toEqual(CHECKOUTS_STARTED_NOW);
  expect(workerDeploymentOptionsOf(off)).toBeUndefined();
});

test('versioning on: the deployment version from the environment, unannotated workflows pinned', () => {
  expect(workerDeploymentOptionsOf(versioning)).toEqual({
    version: { deploymentName: 'ticketing', buildId: 'v7' },
    useWorkerVersioning: true,
    defaultVersioningBehavior: 'PINNED',
  });
});

test('an unreadable deployment (the server down, no permission) falls back to the baseline', async () => {
  const failing = {
    workflowService: { describeWorkerDeployment: () => Promise.reject(new Error('unavailable')) },
  };
  expect(await checkoutStartOptions(failing as never, versioning)).toEqual({});
});

test('buyer-facing runs are pinned; memberships and settlements auto-upgrade', () => {
  for (const pinned of ['checkout', 'cancellation', 'refund', 'purchaseSession'] as const) {
    expect(VERSIONING_BEHAVIOURS[pinned]).toBe('PINNED');
  }
  expect(VERSIONING_BEHAVIOURS.membership).toBe('AUTO_UPGRADE');
  expect(VERSIONING_BEHAVIOURS.settlement).toBe('AUTO_UPGRADE');
});
