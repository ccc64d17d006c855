import { Client, Connection } from '@temporalio/client';
import { workflowClientInterceptors } from '../observability/temporal-tracing.js';
import { type Env, loadEnv } from './env.js';
import { type PayloadCodecEnv, temporalDataConverter } from './payload-codec.js';

/**
 * A Temporal client that encrypts and decrypts payloads with the service's payload codec, as the worker does.
 * Callers that pass only the address and namespace get the codec keys of this process's environment.
 * Start tracing (observability/tracing.ts) before calling it, so the client's interceptors include trace context.
 */
export async function connectTemporalClient(
  env: Pick<Env, 'TEMPORAL_ADDRESS' | 'TEMPORAL_NAMESPACE'> & Partial<PayloadCodecEnv>,
): Promise<{
  client: Client;
  connection: Connection;
}> {
  const codecEnv: PayloadCodecEnv =
    env.PAYLOAD_CODEC_KEYS !== undefined && env.PAYLOAD_CODEC_ACTIVE_KEY !== undefined
      ? { PAYLOAD_CODEC_KEYS: env.PAYLOAD_CODEC_KEYS, PAYLOAD_CODEC_ACTIVE_KEY: env.PAYLOAD_CODEC_ACTIVE_KEY }
      : loadEnv();
  const connection = await Connection.connect({ address: env.TEMPORAL_ADDRESS });
  const client = new Client({
    connection,
    namespace: env.TEMPORAL_NAMESPACE,
    dataConverter: temporalDataConverter(codecEnv),
    // The request id (and, when this process traces, the trace context) travel into workflows as headers.
    interceptors: { workflow: workflowClientInterceptors() },
  });
  return { client, connection };
}
