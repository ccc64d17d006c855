/**
 * Operators add payout accounts with a validated command (issue 31): before it, settlement approval was refused
 * (no_payout_accounts) until someone inserted rows by SQL. The command is parsed by commander like the rest of
 * scripts/operator.ts: a usage error exits 2, a refusal 1.
 */
import { randomUUID } from 'node:crypto';
import { runOperator } from '../../scripts/operator.js';
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
beforeAll(async () => {
  api = await startTestApi();
  organizer = await createOrganizer(api.orm.em.fork());
});
afterAll(async () => {
  await api.close();
});

async function operator(...argv: string[]): Promise<{ code: number; output: string }> {
  const lines: string[] = [];
  const code = await runOperator(argv, { orm: api.orm, env: api.env, print: (line) => lines.push(line) });
  return { code, output: lines.join('\n') };
}

const add = (workspaceId: string, extra: Record<string, string> = {}) => {
  const options = { holder: 'Producciones SAS', bank: 'Banco Uno', last4: '1234', percentage: '60', ...extra };
  return operator(
    'payout-accounts',
    'add',
    '--workspace',
    workspaceId,
    ...Object.entries(options).flatMap(([name, value]) => [`--${name}`, value]),
  );
};

const rowsOf = (workspaceId: string) =>
  api.orm.em
    .fork()
    .execute<Array<{ holder_name: string; account_last4: string; default_percentage: number; active: boolean }>>(
      'select holder_name, account_last4, default_percentage, active from payout_accounts where workspace_id = ? order by id',
      [workspaceId],
    );

describe('npm run operator -- payout-accounts', () => {
  test('add writes an active account and list shows it; the shares of a workspace never pass 100 %', async () => {
    const first = await add(organizer.workspaceId);
    expect(first.code).toBe(0);
    expect(first.output).toContain('added ');
    expect(first.output).toContain('settlements need 100 %');
    const second = await add(organizer.workspaceId, { holder: 'Ana Gómez', last4: '9876', percentage: '40' });
    expect(second.code).toBe(0);
    expect(await rowsOf(organizer.workspaceId)).toEqual([
      { holder_name: 'Producciones SAS', account_last4: '1234', default_percentage: 60, active: true },
      { holder_name: 'Ana Gómez', account_last4: '9876', default_percentage: 40, active: true },
    ]);

    const over = await add(organizer.workspaceId, { percentage: '1' });
    expect(over.code).toBe(1);
    expect(over.output).toContain('percentages_exceed_100');

    const listed = await operator('payout-accounts', 'list', '--workspace', organizer.workspaceId);
    expect(listed.code).toBe(0);
    expect(listed.output).toContain('****1234');
    expect(listed.output).toContain('****9876');
    expect(listed.output).not.toContain('9876  Banco Uno  Producciones');
  });

  test.each([
    [{ last4: '12a4' }, '--last4'],
    [{ last4: '123456789' }, '--last4'],
    [{ percentage: '0' }, '--percentage'],
    [{ percentage: '12.5' }, '--percentage'],
    [{ holder: 'A\u202Egnp.exe' }, '--holder'],
    [{ bank: '' }, '--bank'],
  ])('bad input %j is a usage error naming %s, and nothing is written', async (extra, flag) => {
    const fresh = await createOrganizer(api.orm.em.fork());
    const result = await add(fresh.workspaceId, extra);
    expect(result.code).toBe(2);
    expect(result.output).toContain(flag);
    expect(await rowsOf(fresh.workspaceId)).toEqual([]);
  });

  test('an unknown workspace is refused; a missing option or an unknown command is a usage error', async () => {
    const unknown = await add(randomUUID());
    expect(unknown.code).toBe(1);
    expect(unknown.output).toContain('workspace_not_found');
    expect((await operator('payout-accounts', 'add', '--workspace', organizer.workspaceId)).code).toBe(2);
    expect((await operator('payout-accounts', 'bogus')).code).toBe(2);
    expect((await operator('payout-accounts', 'list', '--workspace', 'nope')).code).toBe(2);
  });
});
