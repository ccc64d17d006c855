import { z } from 'zod';
import { ProviderError } from '../errors.js';
import { field, JsonHttp } from '../http.js';
import { nullableString } from '../schemas.js';

/**
 * Seat-map provider client (seats.io-style API). Authentication is HTTP Basic with the workspace secret key as
 * the user name and an empty password. Seats move between `free`, `reservedByToken` (held by a hold token that
 * expires) and `booked`; every status change is all-or-nothing for the objects it names.
 *
 * A rejected change (a seat held by another token, already booked, unknown) is a ProviderError with status 400,
 * `retryable: false`, the provider's code (`ILLEGAL_STATUS_CHANGE`, …) and `details` as `SeatMapErrorBody`.
 */

export type SeatStatus = 'free' | 'reservedByToken' | 'booked';

export interface SeatMapObjectInfo {
  label: string;
  status: SeatStatus | string;
  holdToken: string | null;
  orderId: string | null;
  categoryKey: string | null;
  categoryLabel: string | null;
  forSale: boolean;
}

export interface SeatMapHoldToken {
  holdToken: string;
  expiresAt: string;
  expiresInSeconds: number;
}

export interface SeatMapEvent {
  id: string | number;
  key: string;
  chartKey: string;
  createdOn: string | null;
}

export interface SeatMapErrorBody {
  errors: Array<{ code: string; message: string }>;
  messages: string[];
}

export interface SeatMapClientOptions {
  /** e.g. `https://api-eu.seatsio.net` or `http://127.0.0.1:4010/seatmap`. */
  baseUrl: string;
  secretKey: string;
  /** Sent as `X-Workspace-Key` when set (company admin keys addressing one workspace). */
  workspaceKey?: string;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

const HoldTokenSchema = z.object({ holdToken: z.string(), expiresAt: z.string(), expiresInSeconds: z.number() });
const EventSchema = z.object({
  id: z.union([z.number(), z.string()]),
  key: z.string(),
  chartKey: z.string(),
  createdOn: nullableString,
});
const ObjectInfoSchema = z.object({
  label: z.string(),
  status: z.string(),
  holdToken: nullableString,
  orderId: nullableString,
  categoryKey: z
    .union([z.string(), z.number()])
    .nullish()
    .transform((value) => (value === null || value === undefined ? null : String(value))),
  categoryLabel: nullableString,
  forSale: z.boolean().optional().default(true),
});
const ObjectInfosSchema = z.record(z.string(), ObjectInfoSchema);
const StatusChangeSchema = z.union([z.object({ objects: ObjectInfosSchema }), z.null()]);

function describeSeatMapError(body: unknown): { code: string | null; message: string | null } {
  const errors = field(body, 'errors');
  const first = Array.isArray(errors) ? (errors[0] as unknown) : undefined;
  const code = field(first, 'code');
  const messages = field(body, 'messages');
  return {
    code: typeof code === 'string' ? code : null,
    message: Array.isArray(messages) ? messages.filter((m) => typeof m === 'string').join('; ') || null : null,
  };
}

/** The provider's error body from a ProviderError, when it had one. */
export function seatMapErrorBody(error: ProviderError): SeatMapErrorBody | null {
  const errors = field(error.details, 'errors');
  const messages = field(error.details, 'messages');
  if (!Array.isArray(errors)) return null;
  return {
    errors: errors.map((entry: unknown) => ({
      code: String(field(entry, 'code') ?? ''),
      message: String(field(entry, 'message') ?? ''),
    })),
    messages: Array.isArray(messages) ? messages.map(String) : [],
  };
}

const toObjectInfo = (raw: z.output<typeof ObjectInfoSchema>): SeatMapObjectInfo => ({
  label: raw.label,
  status: raw.status,
  holdToken: raw.holdToken,
  orderId: raw.orderId,
  categoryKey: raw.categoryKey,
  categoryLabel: raw.categoryLabel,
  forSale: raw.forSale,
});

export class SeatMapClient {
  readonly #http: JsonHttp;

  constructor(options: SeatMapClientOptions) {
    this.#http = new JsonHttp({
      provider: 'seatmap',
      baseUrl: options.baseUrl,
      timeoutMs: options.timeoutMs ?? 10_000,
      headers: {
        authorization: `Basic ${Buffer.from(`${options.secretKey}:`).toString('base64')}`,
        ...(options.workspaceKey ? { 'x-workspace-key': options.workspaceKey } : {}),
      },
      describeError: describeSeatMapError,
      fetch: options.fetch,
    });
  }

  /** Creates the event for an event date; when it already exists for the same chart it is returned as is. */
  async createEvent(input: { chartKey: string; eventKey: string }): Promise<SeatMapEvent> {
    try {
      const { data } = await this.#http.request({
        method: 'POST',
        path: '/events',
        body: { chartKey: input.chartKey, eventKey: input.eventKey },
        schema: EventSchema,
      });
      return data;
    } catch (error) {
      if (error instanceof ProviderError && error.code === 'EVENT_KEY_ALREADY_EXISTS') {
        const existing = await this.getEvent(input.eventKey);
        if (existing && existing.chartKey === input.chartKey) return existing;
      }
      throw error;
    }
  }

  async getEvent(eventKey: string): Promise<SeatMapEvent | null> {
    try {
      const { data } = await this.#http.request({
        method: 'GET',
        path: `/events/${encodeURIComponent(eventKey)}`,
        schema: EventSchema,
      });
      return data;
    } catch (error) {
      if (error instanceof ProviderError && error.status === 404) return null;
      throw error;
    }
  }

  /** A new hold token; without `expiresInMinutes` the provider's default (15 minutes) applies. */
  async createHoldToken(expiresInMinutes?: number): Promise<SeatMapHoldToken> {
    const { data } = await this.#http.request({
      method: 'POST',
      path: '/hold-tokens',
      body: expiresInMinutes === undefined ? {} : { expiresInMinutes },
      schema: HoldTokenSchema,
    });
    return data;
  }

  /** Null once the token expired (its seats are free again) or never existed. */
  async getHoldToken(holdToken: string): Promise<SeatMapHoldToken | null> {
    try {
      const { data } = await this.#http.request({
        method: 'GET',
        path: `/hold-tokens/${encodeURIComponent(holdToken)}`,
        schema: HoldTokenSchema,
      });
      return data;
    } catch (error) {
      if (error instanceof ProviderError && error.status === 404) return null;
      throw error;
    }
  }

  /** Moves a token's expiry to `expiresInMinutes` from now (0 expires it, releasing its seats). */
  async updateHoldTokenExpiry(holdToken: string, expiresInMinutes: number): Promise<SeatMapHoldToken> {
    const { data } = await this.#http.request({
      method: 'POST',
      path: `/hold-tokens/${encodeURIComponent(holdToken)}`,
      body: { expiresInMinutes },
      schema: HoldTokenSchema,
    });
    return data;
  }

  /** Holds every label for the token, or none of them. */
  async hold(input: { eventKey: string; labels: string[]; holdToken: string }): Promise<SeatMapObjectInfo[]> {
    return this.#changeStatus('hold', input.eventKey, { objects: input.labels, holdToken: input.holdToken });
  }

  /** Frees the labels. With a hold token, seats held by another token are refused; free seats stay free. */
  async release(input: {
    eventKey: string;
    labels: string[];
    holdToken?: string | null;
  }): Promise<SeatMapObjectInfo[]> {
    return this.#changeStatus('release', input.eventKey, {
      objects: input.labels,
      ...(input.holdToken ? { holdToken: input.holdToken } : {}),
    });
  }

  /** Books the labels (held seats need their hold token). Re-booking with the same `orderId` is a no-op. */
  async book(input: {
    eventKey: string;
    labels: string[];
    holdToken?: string | null;
    orderId?: string | null;
  }): Promise<SeatMapObjectInfo[]> {
    return this.#changeStatus('book', input.eventKey, {
      objects: input.labels,
      ...(input.holdToken ? { holdToken: input.holdToken } : {}),
      ...(input.orderId ? { orderId: input.orderId } : {}),
    });
  }

  /** Status, hold token and category of the given labels (all objects when `labels` is omitted). */
  async objectStatuses(eventKey: string, labels?: string[]): Promise<SeatMapObjectInfo[]> {
    const { data } = await this.#http.request({
      method: 'GET',
      path: `/events/${encodeURIComponent(eventKey)}/objects`,
      query: labels ? { label: labels } : {},
      schema: ObjectInfosSchema,
    });
    return Object.values(data).map(toObjectInfo);
  }

  async #changeStatus(
    action: 'hold' | 'release' | 'book',
    eventKey: string,
    body: Record<string, unknown>,
  ): Promise<SeatMapObjectInfo[]> {
    const { data } = await this.#http.request({
      method: 'POST',
      path: `/events/${encodeURIComponent(eventKey)}/actions/${action}`,
      query: { expand: 'objects' },
      body,
      schema: StatusChangeSchema,
    });
    return data ? Object.values(data.objects).map(toObjectInfo) : [];
  }
}
