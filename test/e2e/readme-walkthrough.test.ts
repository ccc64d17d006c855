/**
 * README.md as a reader uses it. The purchase walk-through (the ```bash walkthrough blocks, in order) runs as one
 * `bash -euo pipefail` script against the test stack's real API process and sandbox, with the variables the README
 * says to export pointing at a fresh workspace: a block that breaks fails the script, and the sales it made are read
 * back from the organizer API. The health endpoints the app serves must be listed in docs/operations.md, and the
 * buyer-shapes note of docs/api-guide.md must name the fields the API really takes. test/unit/docs.test.ts checks
 * that the README's and the docs' tables render, links resolve and commands work as pasted.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { bearer, createOrganizer } from '../support/fixtures.js';
import { publishEvent } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const OPERATIONS = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
const API_GUIDE = readFileSync(join(ROOT, 'docs', 'api-guide.md'), 'utf8');
const SCRIPT_TIMEOUT_MS = 150_000;

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

/** The bodies of the ```bash walkthrough fences, in order. */
function walkthroughBlocks(markdown: string): string[] {
  const blocks: string[] = [];
  let current: string[] | null = null;
  for (const line of markdown.split('\n')) {
    if (current === null) {
      if (/^```bash walkthrough\s*$/.test(line)) current = [];
    } else if (/^```\s*$/.test(line)) {
      blocks.push(current.join('\n'));
      current = null;
    } else current.push(line);
  }
  if (current !== null) throw new Error('README.md: a ```bash walkthrough block is never closed');
  return blocks;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Every path the app serves, read back from its router tree. */
function servedPaths(app: FastifyInstance): string[] {
  const paths: string[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^((?:│ {3}| {4})*)(?:├── |└── )(\S+)/.exec(line);
    if (!match) continue;
    const depth = (match[1] ?? '').length / 4;
    stack.length = depth;
    const path = `${stack[depth - 1] ?? ''}${match[2]}`;
    stack[depth] = path;
    paths.push(path);
  }
  return paths;
}

type JsonSchema = { $ref?: string; properties?: Record<string, JsonSchema> };
type Operation = {
  requestBody?: { content: { 'application/json': { schema: JsonSchema } } };
  responses?: Record<string, { content?: { 'application/json'?: { schema: JsonSchema } } }>;
};

/** An OpenAPI document the app serves, with its operations looked up by full path and its $refs resolved. */
async function openApi(url: string) {
  const response = await api.request({ method: 'GET', url });
  expect(response.statusCode).toBe(200);
  const doc = response.json() as {
    servers?: Array<{ url: string }>;
    paths: Record<string, Record<string, Operation>>;
    components?: { schemas?: Record<string, JsonSchema> };
  };
  const base = doc.servers?.[0]?.url ?? '';
  const resolve = (schema: JsonSchema | undefined): JsonSchema => {
    const name = schema?.$ref?.replace('#/components/schemas/', '');
    return name ? resolve(doc.components?.schemas?.[name]) : (schema ?? {});
  };
  const operation = (method: 'post', path: string): Operation => {
    const found = (doc.paths[path] ?? doc.paths[path.slice(base.length)])?.[method];
    if (!found) throw new Error(`${url} has no ${method.toUpperCase()} ${path}`);
    return found;
  };
  const fields = (schema: JsonSchema | undefined): string[] => Object.keys(resolve(schema).properties ?? {});
  return { resolve, operation, fields };
}

describe('README.md', () => {
  test('scripts/walkthrough.sh runs exactly the walk-through blocks', async () => {
    const blocks = walkthroughBlocks(README);
    expect(blocks.length).toBeGreaterThanOrEqual(5);
    const printed = await run('bash', ['scripts/walkthrough.sh', '--print'], process.env, 10_000);
    expect(printed.code).toBe(0);
    expect(printed.stdout.trim()).toBe(blocks.join('\n\n').trim());
  });

  test(
    'the purchase walk-through works as pasted: a PSE purchase and a card purchase end CONFIRMED',
    async () => {
      const organizer = await createOrganizer(api.orm.em.fork());
      const event = await publishEvent(api, organizer, { price: 80_000, capacity: 20 });
      const script = walkthroughBlocks(README).join('\n\n');
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        // The Node running jest, for the README's `node` helpers.
        PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
        API: `${api.env.PUBLIC_ORIGIN.replace(/\/$/, '')}/api/v1`,
        SANDBOX: api.env.SANDBOX_URL,
        KEY: organizer.key,
        DATE: event.eventDateId,
        TYPE: event.ticketTypeId,
      };
      const result = await run(
        'bash',
        ['-euo', 'pipefail', '-c', script, 'readme-walkthrough'],
        env,
        SCRIPT_TIMEOUT_MS,
      );
      if (result.code !== 0) {
        throw new Error(
          `the README walk-through exited ${result.code}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`,
        );
      }

      const listed = await api.request({
        method: 'GET',
        url: `/api/v1/sales?eventDate=${event.eventDateId}`,
        headers: bearer(organizer.key),
      });
      expect(listed.statusCode).toBe(200);
      const sales = listed.json().data as Array<{ id: string; reference: string; status: string; buyerEmail: string }>;
      expect(sales.map((sale) => sale.status)).toEqual(['CONFIRMED', 'CONFIRMED']);
      // One fresh buyer per run made both purchases.
      expect(new Set(sales.map((sale) => sale.buyerEmail)).size).toBe(1);
      expect(sales[0]?.buyerEmail).toMatch(/^buyer-\d+-\d+@example\.com$/);
      const ticketCounts: number[] = [];
      for (const sale of sales) {
        const tickets = await api.request({
          method: 'GET',
          url: `/api/v1/sales/${sale.id}/tickets`,
          headers: bearer(organizer.key),
        });
        ticketCounts.push((tickets.json().data as unknown[]).length);
        // The script printed what the organizer sees of each sale.
        expect(result.stdout).toContain(`${sale.reference} CONFIRMED`);
      }
      expect(ticketCounts.sort()).toEqual([1, 2]);
    },
    SCRIPT_TIMEOUT_MS + 30_000,
  );

  test('the health endpoints the app serves are listed in docs/operations.md', async () => {
    const health = servedPaths(api.app).filter((path) => /^\/health\/[a-z]+$/.test(path));
    expect(health.length).toBeGreaterThanOrEqual(2);
    for (const path of health) {
      expect({ path, listed: OPERATIONS.includes(`\`GET ${path}\``) }).toEqual({ path, listed: true });
    }
    const live = await api.request({ method: 'GET', url: '/health/live' });
    expect(live.statusCode).toBe(200);
  });

  test('the buyer-shapes note of docs/api-guide.md names every buyer field the public and customer orders take', async () => {
    const start = API_GUIDE.indexOf('### Buyer shapes');
    expect(start).toBeGreaterThan(-1);
    const note = API_GUIDE.slice(start, API_GUIDE.indexOf('\n#', start + 1));

    const publicDoc = await openApi('/api/public/openapi.json');
    const publicOrder = publicDoc.operation('post', '/api/public/orders');
    const publicFields = publicDoc
      .fields(publicOrder.requestBody?.content['application/json'].schema)
      .filter((field) => field.startsWith('buyer'));
    expect(publicFields).toEqual(expect.arrayContaining(['buyerEmail', 'buyerName', 'buyerPhone']));

    const customerDoc = await openApi('/api/v1/openapi.json');
    const customerOrder = customerDoc.operation('post', '/api/v1/customer/orders');
    const orderBody = customerDoc.resolve(customerOrder.requestBody?.content['application/json'].schema);
    const customerFields = customerDoc.fields(orderBody.properties?.buyer).map((field) => `buyer.${field}`);
    expect(customerFields).toEqual(expect.arrayContaining(['buyer.name', 'buyer.idType']));

    const verify = customerDoc.operation('post', '/api/v1/customer/auth/verify');
    const verified = customerDoc.resolve(verify.responses?.['200']?.content?.['application/json']?.schema);
    const session = customerDoc.resolve(verified.properties?.data);
    const sessionFields = Object.keys(session.properties ?? {});
    expect(sessionFields).toContain('session_token');
    const sessionBuyer = customerDoc.fields(session.properties?.buyer);

    for (const field of [...publicFields, ...customerFields, ...sessionFields]) {
      expect({ field, named: note.includes(`\`${field}\``) }).toEqual({ field, named: true });
    }
    expect(note).toContain(`\`{ ${sessionBuyer.join(', ')} }\``);
  });
});
