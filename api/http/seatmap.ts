import type { Env } from '../../config/env.js';
import { providerUrls } from '../../config/env.js';
import { SeatMapClient } from '../../integrations/seatmap/client.js';

const clients = new WeakMap<Env, SeatMapClient>();

/** The seat-map provider as the API reads it (availability, attaching charts); the worker holds and books. */
export function seatMapClient(env: Env): SeatMapClient {
  let client = clients.get(env);
  if (!client) {
    client = new SeatMapClient({ baseUrl: providerUrls(env).seatMap, secretKey: env.SEATMAP_SECRET_KEY });
    clients.set(env, client);
  }
  return client;
}

/** The provider's event key of an event date: the date's id, so it can be created again idempotently. */
export const seatMapEventKeyOf = (eventDateId: string): string => eventDateId;
