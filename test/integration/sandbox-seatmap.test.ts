import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ProviderError } from '../../integrations/errors.js';
import { SeatMapClient, seatMapErrorBody } from '../../integrations/seatmap/client.js';
import type { SandboxHandle } from '../../sandbox/server.js';
import { control, rejectionOf, startTestSandbox } from './sandbox-support.js';

let sandbox: SandboxHandle;
let client: SeatMapClient;
let sequence = 0;

const CHART = 'hall-1';
const eventKey = (): string => `date-${Date.now().toString(36)}-${++sequence}`;

beforeAll(async () => {
  sandbox = await startTestSandbox();
  client = new SeatMapClient({
    baseUrl: `${sandbox.httpUrl}/seatmap`,
    secretKey: sandbox.secrets.seatmap.secretKey,
    timeoutMs: 5000,
  });
  const chart = await control(sandbox, 'POST', '/seatmap/charts', {
    chartKey: CHART,
    objects: [
      ...['A-1', 'A-2', 'A-3', 'A-4'].map((label) => ({ label, categoryKey: 'vip', categoryLabel: 'VIP' })),
      ...['B-1', 'B-2'].map((label) => ({ label, categoryKey: 'general', categoryLabel: 'General' })),
    ],
  });
  expect(chart.status).toBe(201);
});

afterAll(async () => {
  await sandbox?.close();
});

async function statuses(key: string, labels: string[]): Promise<Record<string, [string, string | null]>> {
  const infos = await client.objectStatuses(key, labels);
  return Object.fromEntries(infos.map((info) => [info.label, [info.status, info.holdToken]]));
}

async function newEvent(): Promise<string> {
  const key = eventKey();
  await client.createEvent({ chartKey: CHART, eventKey: key });
  return key;
}

describe('seat map events and hold tokens', () => {
  it('creates an event from a chart, idempotently, with every seat free and its category', async () => {
    const key = eventKey();
    const created = await client.createEvent({ chartKey: CHART, eventKey: key });
    const again = await client.createEvent({ chartKey: CHART, eventKey: key });
    expect(created).toMatchObject({ key, chartKey: CHART });
    expect(again.id).toBe(created.id);

    const infos = await client.objectStatuses(key);
    expect(infos).toHaveLength(6);
    expect(infos.find((info) => info.label === 'B-2')).toMatchObject({
      status: 'free',
      holdToken: null,
      categoryKey: 'general',
      categoryLabel: 'General',
    });
  });

  it('refuses an event for an unknown chart', async () => {
    const error = await rejectionOf(client.createEvent({ chartKey: 'nope', eventKey: eventKey() }));
    expect(error).toMatchObject({ provider: 'seatmap', status: 400, code: 'CHART_NOT_FOUND', retryable: false });
  });

  it('creates and reads hold tokens with their expiry', async () => {
    const token = await client.createHoldToken(10);
    expect(token.expiresInSeconds).toBeGreaterThan(590);
    expect(token.expiresInSeconds).toBeLessThanOrEqual(600);
    const read = await client.getHoldToken(token.holdToken);
    expect(read?.holdToken).toBe(token.holdToken);
    expect(Date.parse(read?.expiresAt ?? '')).toBe(Date.parse(token.expiresAt));
  });

  it('answers 401 to a wrong secret key', async () => {
    const intruder = new SeatMapClient({ baseUrl: `${sandbox.httpUrl}/seatmap`, secretKey: 'wrong' });
    expect(await rejectionOf(intruder.createHoldToken())).toMatchObject({ status: 401, retryable: false });
  });
});

describe('seat map holds', () => {
  it('holds seats for one token and refuses them to another, all or nothing', async () => {
    const key = await newEvent();
    const first = await client.createHoldToken();
    const second = await client.createHoldToken();

    const held = await client.hold({ eventKey: key, labels: ['A-1', 'A-2'], holdToken: first.holdToken });
    expect(held.map((info) => [info.label, info.status, info.holdToken])).toEqual([
      ['A-1', 'reservedByToken', first.holdToken],
      ['A-2', 'reservedByToken', first.holdToken],
    ]);

    const error = await rejectionOf(
      client.hold({ eventKey: key, labels: ['A-2', 'A-3'], holdToken: second.holdToken }),
    );
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ provider: 'seatmap', status: 400, retryable: false, code: 'ILLEGAL_STATUS_CHANGE' });
    const body = seatMapErrorBody(error as ProviderError);
    expect(body?.messages).toEqual(['A-2 is already held by another hold token']);

    // A-3 was free and stays free: nothing of the refused change was applied.
    expect(await statuses(key, ['A-1', 'A-2', 'A-3'])).toEqual({
      'A-1': ['reservedByToken', first.holdToken],
      'A-2': ['reservedByToken', first.holdToken],
      'A-3': ['free', null],
    });
  });

  it('names every offending seat, including unknown ones', async () => {
    const key = await newEvent();
    const token = await client.createHoldToken();
    await client.book({ eventKey: key, labels: ['B-1'] });
    const error = await rejectionOf(
      client.hold({ eventKey: key, labels: ['B-1', 'Z-9', 'B-2'], holdToken: token.holdToken }),
    );
    const body = seatMapErrorBody(error as ProviderError);
    expect(body?.errors.map((e) => e.code)).toEqual(['ILLEGAL_STATUS_CHANGE', 'OBJECT_NOT_FOUND']);
    expect(body?.messages).toEqual(['B-1 is already booked', 'Object not found: Z-9']);
    expect(await statuses(key, ['B-2'])).toEqual({ 'B-2': ['free', null] });
  });

  it('releases only with the holding token, and releasing a free seat changes nothing', async () => {
    const key = await newEvent();
    const owner = await client.createHoldToken();
    const other = await client.createHoldToken();
    await client.hold({ eventKey: key, labels: ['A-1'], holdToken: owner.holdToken });

    expect(
      await rejectionOf(client.release({ eventKey: key, labels: ['A-1'], holdToken: other.holdToken })),
    ).toMatchObject({
      status: 400,
      code: 'ILLEGAL_STATUS_CHANGE',
    });
    await client.release({ eventKey: key, labels: ['A-1', 'A-4'], holdToken: owner.holdToken });
    expect(await statuses(key, ['A-1', 'A-4'])).toEqual({ 'A-1': ['free', null], 'A-4': ['free', null] });
  });

  it('books held seats only with their token; a repeated booking of the same order is a no-op', async () => {
    const key = await newEvent();
    const token = await client.createHoldToken();
    const rival = await client.createHoldToken();
    await client.hold({ eventKey: key, labels: ['A-1', 'A-2'], holdToken: token.holdToken });

    expect(await rejectionOf(client.book({ eventKey: key, labels: ['A-1'] }))).toMatchObject({
      status: 400,
      code: 'ILLEGAL_STATUS_CHANGE',
    });
    const booked = await client.book({
      eventKey: key,
      labels: ['A-1', 'A-2'],
      holdToken: token.holdToken,
      orderId: 'FT-1',
    });
    expect(booked.map((info) => [info.status, info.orderId])).toEqual([
      ['booked', 'FT-1'],
      ['booked', 'FT-1'],
    ]);
    await client.book({ eventKey: key, labels: ['A-1', 'A-2'], holdToken: token.holdToken, orderId: 'FT-1' });
    expect(await rejectionOf(client.book({ eventKey: key, labels: ['A-1'], orderId: 'FT-2' }))).toMatchObject({
      status: 400,
    });
    expect(
      await rejectionOf(client.hold({ eventKey: key, labels: ['A-2'], holdToken: rival.holdToken })),
    ).toMatchObject({
      status: 400,
    });
  });
});

describe('seat map hold expiry', () => {
  it('frees the seats of a token expired through the control API, and refuses the dead token', async () => {
    const key = await newEvent();
    const token = await client.createHoldToken();
    await client.hold({ eventKey: key, labels: ['A-3', 'A-4'], holdToken: token.holdToken });

    const expired = await control(sandbox, 'POST', '/seatmap/expire-hold', { holdToken: token.holdToken });
    expect(expired.status).toBe(200);
    expect(await statuses(key, ['A-3', 'A-4'])).toEqual({ 'A-3': ['free', null], 'A-4': ['free', null] });
    expect(await client.getHoldToken(token.holdToken)).toBeNull();
    expect(
      await rejectionOf(client.book({ eventKey: key, labels: ['A-3'], holdToken: token.holdToken, orderId: 'late' })),
    ).toMatchObject({ status: 400, code: 'HOLD_TOKEN_EXPIRED' });

    const again = await control(sandbox, 'POST', '/seatmap/expire-hold', { holdToken: token.holdToken });
    expect(again.status).toBe(404);
  });

  it('frees the seats when the token runs out by itself', async () => {
    const key = await newEvent();
    const token = await client.createHoldToken(0.015); // ~0.9 s: the sandbox accepts fractional minutes
    await client.hold({ eventKey: key, labels: ['B-1'], holdToken: token.holdToken });
    expect(await statuses(key, ['B-1'])).toEqual({ 'B-1': ['reservedByToken', token.holdToken] });

    await new Promise((resolve) => setTimeout(resolve, 1300));
    expect(await statuses(key, ['B-1'])).toEqual({ 'B-1': ['free', null] });
    expect(await client.getHoldToken(token.holdToken)).toBeNull();
  });

  it('moves a token expiry, and 0 minutes releases its seats at once', async () => {
    const key = await newEvent();
    const token = await client.createHoldToken(1);
    const extended = await client.updateHoldTokenExpiry(token.holdToken, 30);
    expect(extended.expiresInSeconds).toBeGreaterThan(1700);

    await client.hold({ eventKey: key, labels: ['B-2'], holdToken: token.holdToken });
    await client.updateHoldTokenExpiry(token.holdToken, 0);
    expect(await statuses(key, ['B-2'])).toEqual({ 'B-2': ['free', null] });
  });
});
