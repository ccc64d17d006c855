import type { TLSConfig } from '@temporalio/client';
import { Client, Connection } from '@temporalio/client';
import { workflowClientInterceptors } from '../observability/temporal-tracing.js';
import { type Env, loadEnv } from './env.js';
import { type PayloadCodecEnv, temporalDataConverter } from './payload-codec.js';

/** The settings of the connection to Temporal: where, and how it is secured. */
export type TemporalConnectionEnv = Pick<Env, 'TEMPORAL_ADDRESS'> &
  Partial<
    Pick<
      Env,
      | 'TEMPORAL_TLS'
      | 'TEMPORAL_TLS_SERVER_NAME'
      | 'TEMPORAL_TLS_CA_CERT'
      | 'TEMPORAL_TLS_CLIENT_CERT'
      | 'TEMPORAL_TLS_CLIENT_KEY'
      | 'TEMPORAL_API_KEY'
    >
  >;

/**
 * Options for `Connection.connect` (clients) and `NativeConnection.connect` (workers) alike, so that every connection
 * of every process is secured the same way: plain on a private network (the dev server, the compose file), TLS with an
 * optional private CA, mTLS with a client certificate, or an API key (Temporal Cloud), which always travels over TLS.
 */
export function temporalConnectionOptions(env: TemporalConnectionEnv): {
  address: string;
  tls?: TLSConfig;
  apiKey?: string;
} {
  const pem = (value: string | undefined) => (value === undefined ? undefined : Buffer.from(value));
  const tls: TLSConfig = {
    ...(env.TEMPORAL_TLS_SERVER_NAME ? { serverNameOverride: env.TEMPORAL_TLS_SERVER_NAME } : {}),
    ...(env.TEMPORAL_TLS_CA_CERT ? { serverRootCACertificate: pem(env.TEMPORAL_TLS_CA_CERT) } : {}),
    ...(env.TEMPORAL_TLS_CLIENT_CERT && env.TEMPORAL_TLS_CLIENT_KEY
      ? {
          clientCertPair: {
            crt: Buffer.from(env.TEMPORAL_TLS_CLIENT_CERT),
            key: Buffer.from(env.TEMPORAL_TLS_CLIENT_KEY),
          },
        }
      : {}),
  };
  const secured = env.TEMPORAL_TLS === true || env.TEMPORAL_API_KEY !== undefined || Object.keys(tls).length > 0;
  return {
    address: env.TEMPORAL_ADDRESS,
    ...(secured ? { tls } : {}),
    ...(env.TEMPORAL_API_KEY ? { apiKey: env.TEMPORAL_API_KEY } : {}),
  };
}

/**
 * A Temporal client that encrypts and decrypts payloads with the service's payload codec, as the worker does.
 * Callers that pass only the address and namespace get the codec keys of this process's environment.
 * Start tracing (observability/tracing.ts) before calling it, so the client's interceptors include trace context.
 */
export async function connectTemporalClient(
  env: TemporalConnectionEnv & Pick<Env, 'TEMPORAL_NAMESPACE'> & Partial<PayloadCodecEnv>,
): Promise<{
  client: Client;
  connection: Connection;
}> {
  const codecEnv: PayloadCodecEnv =
    env.PAYLOAD_CODEC_KEYS !== undefined && env.PAYLOAD_CODEC_ACTIVE_KEY !== undefined
      ? { PAYLOAD_CODEC_KEYS: env.PAYLOAD_CODEC_KEYS, PAYLOAD_CODEC_ACTIVE_KEY: env.PAYLOAD_CODEC_ACTIVE_KEY }
      : loadEnv();
  const connection = await Connection.connect(temporalConnectionOptions(env));
  const client = new Client({
    connection,
    namespace: env.TEMPORAL_NAMESPACE,
    dataConverter: temporalDataConverter(codecEnv),
    // The request id (and, when this process traces, the trace context) travel into workflows as headers.
    interceptors: { workflow: workflowClientInterceptors() },
  });
  return { client, connection };
}
