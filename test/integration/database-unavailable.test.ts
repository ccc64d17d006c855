/**
 * The database is a dependency (contract 7.2): while it refuses connections, or while every pooled connection is busy
 * for longer than DATABASE_CONNECT_TIMEOUT_MS, the API answers 503 SERVICE_UNAVAILABLE, retryable, with Retry-After;
 * never a 500, never a request left waiting without end; and it serves again as soon as the database does. The API
 * here reaches PostgreSQL through a TCP relay this file owns, so "the database is down" is true for this API only and
 * no other test running meanwhile notices.
 */
import net from 'node:net';
import type { PostgreSqlConnection } from '@mikro-orm/postgresql';
import type { PoolClient } from 'pg';
import { ANY_TENANT } from '../../entities/common.js';
import { Event } from '../../entities/index.js';
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import { startTestApi, type TestApi, testEnv } from '../support/stack.js';

/** A relay to the test database that can refuse every connection (and drop the open ones) and accept them again. */
class DatabaseRelay {
  private readonly server = net.createServer((client) => this.relay(client));
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async open(): Promise<void> {
    if (this.server.listening) return;
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  /** Closes the port (new connections are refused) and drops every open connection, as a database that went down. */
  async cut(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  private relay(client: net.Socket): void {
    const upstream = net.connect(this.target.port, this.target.host);
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream).pipe(client);
  }
}

const CONNECT_TIMEOUT_MS = 1_000;
const database = new URL(testEnv().DATABASE_URL);
const relay = new DatabaseRelay({ host: database.hostname, port: Number(database.port || 5432) });
let api: TestApi;
let organizer: Organizer;

beforeAll(async () => {
  await relay.open();
  const relayed = new URL(database.href);
  relayed.host = `127.0.0.1:${relay.port}`;
  api = await startTestApi({ DATABASE_URL: relayed.href, DATABASE_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS) });
  organizer = await createOrganizer(api.orm.em.fork());
});
// A case that failed with the database cut must not leave the next one without it.
afterEach(() => relay.open());
afterAll(async () => {
  await api.close();
  await relay.cut();
});

const listEvents = () =>
  api.request({ method: 'GET', url: '/api/v1/events', headers: { authorization: `Bearer ${organizer.key}` } });
const createEvent = (name: string) =>
  api.request({
    method: 'POST',
    url: '/api/v1/events',
    headers: { authorization: `Bearer ${organizer.key}`, 'content-type': 'application/json' },
    payload: { name },
  });

function expectDatabaseUnavailable(response: Awaited<ReturnType<typeof listEvents>>): void {
  expect({ status: response.statusCode, body: response.json(), retryAfter: response.headers['retry-after'] }).toEqual({
    status: 503,
    body: {
      error: {
        code: 'SERVICE_UNAVAILABLE',
        message: 'The database is unavailable; retry shortly',
        retryable: true,
        details: { reason: 'database_unavailable' },
      },
    },
    retryAfter: '2',
  });
}

test('a database that refuses connections gets 503 retryable, and the API serves again once it is back', async () => {
  expect((await listEvents()).statusCode).toBe(200);

  await relay.cut();
  expectDatabaseUnavailable(await listEvents());
  const name = `Written while the database was down ${Date.now()}`;
  expectDatabaseUnavailable(await createEvent(name));

  await relay.open();
  expect((await listEvents()).statusCode).toBe(200);
  // The refused write left nothing behind: the organizer retries it and gets exactly one event.
  expect((await createEvent(name)).statusCode).toBe(201);
  expect(await api.orm.em.fork().count(Event, { workspace: organizer.workspaceId, name }, ANY_TENANT)).toBe(1);
});

test('with every pooled connection busy past the connect timeout, a request gets 503 instead of waiting on', async () => {
  const pool = await (api.orm.em.getConnection() as PostgreSqlConnection).getNativeClient();
  const held: PoolClient[] = [];
  try {
    // Takes every slot the API's pool has (startTestApi opens five).
    while (pool.totalCount < 5 || pool.idleCount > 0) held.push(await pool.connect());
    expectDatabaseUnavailable(await listEvents());
  } finally {
    for (const client of held) client.release();
  }
  expect((await listEvents()).statusCode).toBe(200);
});
