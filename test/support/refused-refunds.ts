/** What an organizer and an operator see of refunds the gateway refused (the report and the operator command). */
import { runOperator } from '../../scripts/operator.js';
import type { TestApi } from './stack.js';

/** GET /reports/refunds-refused as the organizer whose key is given. */
export async function refusedRefundsListing<Row = { saleId: string; providerPaymentId: string | null }>(
  api: TestApi,
  organizerKey: string,
): Promise<Row[]> {
  const response = await api.request({
    method: 'GET',
    url: '/api/v1/reports/refunds-refused',
    headers: { authorization: `Bearer ${organizerKey}` },
  });
  if (response.statusCode !== 200) throw new Error(`refunds-refused → ${response.statusCode} ${response.body}`);
  return response.json().data;
}

/** `npm run operator -- <argv>` against the test API's database and Temporal; its exit code and what it printed. */
export async function operatorCommand(api: TestApi, ...argv: string[]): Promise<{ code: number; output: string }> {
  const lines: string[] = [];
  const code = await runOperator(argv, {
    orm: api.orm,
    temporal: api.services.temporal,
    env: api.env,
    print: (text) => lines.push(text),
  });
  return { code, output: lines.join('\n') };
}
