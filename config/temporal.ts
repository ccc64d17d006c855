import { Client, Connection } from '@temporalio/client';
import type { Env } from './env.js';

export async function connectTemporalClient(env: Pick<Env, 'TEMPORAL_ADDRESS' | 'TEMPORAL_NAMESPACE'>): Promise<{
  client: Client;
  connection: Connection;
}> {
  const connection = await Connection.connect({ address: env.TEMPORAL_ADDRESS });
  const client = new Client({ connection, namespace: env.TEMPORAL_NAMESPACE });
  return { client, connection };
}
