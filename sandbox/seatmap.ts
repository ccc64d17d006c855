import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { SandboxSecrets } from './config.js';
import { alphanumericId, issuesText, sameSecret } from './support.js';

/**
 * Seat-map provider stand-in, imitating seats.io's REST API under `/seatmap` (HTTP Basic, secret key as user):
 *
 *   POST /events                                  { chartKey, eventKey? } → event
 *   GET  /events/{eventKey}
 *   POST /hold-tokens                             { expiresInMinutes? } → { holdToken, expiresAt, expiresInSeconds }
 *   GET  /hold-tokens/{token}                     404 once expired
 *   POST /hold-tokens/{token}                     { expiresInMinutes } → new expiry (0 = now)
 *   POST /events/{eventKey}/actions/hold          { objects, holdToken }           ?expand=objects → 200 with objects
 *   POST /events/{eventKey}/actions/release       { objects, holdToken? }          otherwise 204
 *   POST /events/{eventKey}/actions/book          { objects, holdToken?, orderId? }
 *   GET  /events/{eventKey}/objects?label=…&label=…   object infos keyed by label (all objects without labels)
 *
 * Status changes are all-or-nothing. A refused change answers 400 with the provider's error body
 * `{ errors: [{ code, message }], messages, requestId, status }`, one message per offending object.
 * Charts are created through the control API (the real provider has a designer for that).
 * Sandbox leniencies: fractional `expiresInMinutes` (short TTLs in tests), re-holding with the same token and
 * releasing a free seat are no-ops, re-booking with the same orderId is a no-op.
 */

type ObjectStatus = 'free' | 'reservedByToken' | 'booked';

interface ChartObject {
  label: string;
  categoryKey: string | null;
  categoryLabel: string | null;
}

interface EventObject {
  status: ObjectStatus;
  holdToken: string | null;
  orderId: string | null;
}

interface SeatEvent {
  id: number;
  key: string;
  chartKey: string;
  createdOn: Date;
  objects: Map<string, EventObject>;
}

interface HoldToken {
  token: string;
  expiresAt: Date;
}

export const ChartInput = z.object({
  chartKey: z.string().min(1),
  name: z.string().optional(),
  objects: z
    .array(
      z.object({
        label: z.string().min(1),
        categoryKey: z.union([z.string(), z.number()]).transform(String).nullable().optional(),
        categoryLabel: z.string().nullable().optional(),
      }),
    )
    .min(1),
});

const ObjectsField = z
  .array(z.union([z.string().min(1), z.object({ objectId: z.string().min(1) }).transform((o) => o.objectId)]))
  .min(1);
const StatusChangeBody = z.object({
  objects: ObjectsField,
  holdToken: z.string().min(1).optional(),
  orderId: z.string().min(1).optional(),
});
const MinutesBody = z.object({
  expiresInMinutes: z
    .number()
    .min(0)
    .max(24 * 60)
    .optional(),
});

const DEFAULT_HOLD_MINUTES = 15;

export class SeatMapSandbox {
  readonly #secrets: SandboxSecrets['seatmap'];
  readonly #charts = new Map<string, { key: string; name: string; objects: Map<string, ChartObject> }>();
  readonly #events = new Map<string, SeatEvent>();
  readonly #tokens = new Map<string, HoldToken>();
  readonly #sweeper: NodeJS.Timeout;
  #nextEventId = 1;

  constructor(secrets: SandboxSecrets['seatmap']) {
    this.#secrets = secrets;
    this.#sweeper = setInterval(() => this.expireDue(), 250);
    this.#sweeper.unref();
  }

  register(app: FastifyInstance): void {
    app.register(
      async (api) => {
        api.addHook('onRequest', async (request, reply) => {
          if (!this.#authorized(request)) {
            await this.#error(reply, 401, [{ code: 'UNAUTHORIZED', message: 'Invalid secret key' }]);
            return reply;
          }
          this.expireDue();
        });
        api.post('/events', async (request, reply) => this.#createEvent(request, reply));
        api.get<{ Params: { key: string } }>('/events/:key', async (request, reply) => {
          const event = this.#events.get(request.params.key);
          if (!event)
            return this.#error(reply, 404, [
              { code: 'EVENT_NOT_FOUND', message: `Event not found: ${request.params.key}` },
            ]);
          return reply.send(this.#eventJson(event));
        });
        api.post('/hold-tokens', async (request, reply) => {
          const parsed = MinutesBody.safeParse(request.body ?? {});
          if (!parsed.success)
            return this.#error(reply, 400, [{ code: 'VALIDATION_FAILED', message: issuesText(parsed.error) }]);
          const minutes = parsed.data.expiresInMinutes ?? DEFAULT_HOLD_MINUTES;
          const token: HoldToken = { token: alphanumericId(10), expiresAt: new Date(Date.now() + minutes * 60_000) };
          this.#tokens.set(token.token, token);
          return reply.send(this.#tokenJson(token));
        });
        api.get<{ Params: { token: string } }>('/hold-tokens/:token', async (request, reply) => {
          const token = this.#tokens.get(request.params.token);
          if (!token)
            return this.#error(reply, 404, [
              { code: 'HOLD_TOKEN_NOT_FOUND', message: 'Hold token not found or expired' },
            ]);
          return reply.send(this.#tokenJson(token));
        });
        api.post<{ Params: { token: string } }>('/hold-tokens/:token', async (request, reply) => {
          const token = this.#tokens.get(request.params.token);
          if (!token)
            return this.#error(reply, 404, [
              { code: 'HOLD_TOKEN_NOT_FOUND', message: 'Hold token not found or expired' },
            ]);
          const parsed = MinutesBody.required().safeParse(request.body ?? {});
          if (!parsed.success)
            return this.#error(reply, 400, [{ code: 'VALIDATION_FAILED', message: issuesText(parsed.error) }]);
          token.expiresAt = new Date(Date.now() + parsed.data.expiresInMinutes * 60_000);
          const json = this.#tokenJson(token);
          if (parsed.data.expiresInMinutes === 0) this.expire(token.token);
          return reply.send(json);
        });
        for (const action of ['hold', 'release', 'book'] as const) {
          api.post<{ Params: { key: string }; Querystring: { expand?: string } }>(
            `/events/:key/actions/${action}`,
            async (request, reply) => this.#changeStatus(action, request, reply),
          );
        }
        api.get<{ Params: { key: string }; Querystring: { label?: string | string[] } }>(
          '/events/:key/objects',
          async (request, reply) => this.#objectInfos(request, reply),
        );
      },
      { prefix: '/seatmap' },
    );
  }

  // ---- control operations -------------------------------------------------------------------------------------

  /** Creates or replaces a chart. Events already created from it keep their objects. */
  createChart(input: z.output<typeof ChartInput>): { chartKey: string; objects: number } {
    const objects = new Map<string, ChartObject>();
    for (const object of input.objects) {
      objects.set(object.label, {
        label: object.label,
        categoryKey: object.categoryKey ?? null,
        categoryLabel: object.categoryLabel ?? null,
      });
    }
    this.#charts.set(input.chartKey, { key: input.chartKey, name: input.name ?? input.chartKey, objects });
    return { chartKey: input.chartKey, objects: objects.size };
  }

  /** Expires a hold token now: its seats become free. False when it did not exist (or had already expired). */
  expire(holdToken: string): boolean {
    const existed = this.#tokens.delete(holdToken);
    for (const event of this.#events.values()) {
      for (const object of event.objects.values()) {
        if (object.status === 'reservedByToken' && object.holdToken === holdToken) {
          object.status = 'free';
          object.holdToken = null;
        }
      }
    }
    return existed;
  }

  expireDue(now = Date.now()): void {
    for (const token of [...this.#tokens.values()]) if (token.expiresAt.getTime() <= now) this.expire(token.token);
  }

  reset(): void {
    this.#charts.clear();
    this.#events.clear();
    this.#tokens.clear();
  }

  close(): void {
    clearInterval(this.#sweeper);
  }

  // ---- provider endpoints -------------------------------------------------------------------------------------

  #authorized(request: FastifyRequest): boolean {
    const header = request.headers.authorization;
    if (typeof header !== 'string' || !header.startsWith('Basic ')) return false;
    const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
    const user = decoded.includes(':') ? decoded.slice(0, decoded.indexOf(':')) : decoded;
    return sameSecret(user, this.#secrets.secretKey);
  }

  #createEvent(request: FastifyRequest, reply: FastifyReply) {
    const parsed = z
      .object({ chartKey: z.string().min(1), eventKey: z.string().min(1).max(200).optional() })
      .safeParse(request.body);
    if (!parsed.success)
      return this.#error(reply, 400, [{ code: 'VALIDATION_FAILED', message: issuesText(parsed.error) }]);
    const chart = this.#charts.get(parsed.data.chartKey);
    if (!chart) {
      return this.#error(reply, 400, [
        { code: 'CHART_NOT_FOUND', message: `Chart not found: ${parsed.data.chartKey}` },
      ]);
    }
    const key = parsed.data.eventKey ?? randomUUID();
    if (this.#events.has(key)) {
      return this.#error(reply, 400, [
        { code: 'EVENT_KEY_ALREADY_EXISTS', message: `Event key already exists: ${key}` },
      ]);
    }
    const objects = new Map<string, EventObject>();
    for (const label of chart.objects.keys()) objects.set(label, { status: 'free', holdToken: null, orderId: null });
    const event: SeatEvent = { id: this.#nextEventId++, key, chartKey: chart.key, createdOn: new Date(), objects };
    this.#events.set(key, event);
    return reply.code(201).send(this.#eventJson(event));
  }

  #changeStatus(
    action: 'hold' | 'release' | 'book',
    request: FastifyRequest<{ Params: { key: string }; Querystring: { expand?: string } }>,
    reply: FastifyReply,
  ) {
    const event = this.#events.get(request.params.key);
    if (!event)
      return this.#error(reply, 404, [{ code: 'EVENT_NOT_FOUND', message: `Event not found: ${request.params.key}` }]);
    const parsed = StatusChangeBody.safeParse(request.body);
    if (!parsed.success)
      return this.#error(reply, 400, [{ code: 'VALIDATION_FAILED', message: issuesText(parsed.error) }]);
    const { objects: labels, holdToken, orderId } = parsed.data;

    if (action === 'hold' && !holdToken) {
      return this.#error(reply, 400, [
        { code: 'HOLD_TOKEN_REQUIRED', message: 'A hold token is required to hold objects' },
      ]);
    }
    if (holdToken && !this.#tokens.has(holdToken) && action !== 'release') {
      return this.#error(reply, 400, [
        { code: 'HOLD_TOKEN_EXPIRED', message: `Hold token ${holdToken} does not exist or has expired` },
      ]);
    }

    const problems: Array<{ code: string; message: string }> = [];
    for (const label of new Set(labels)) {
      const object = event.objects.get(label);
      if (!object) {
        problems.push({ code: 'OBJECT_NOT_FOUND', message: `Object not found: ${label}` });
        continue;
      }
      const problem = refusal(action, label, object, holdToken ?? null, orderId ?? null);
      if (problem) problems.push({ code: 'ILLEGAL_STATUS_CHANGE', message: problem });
    }
    if (problems.length > 0) return this.#error(reply, 400, problems);

    for (const label of new Set(labels)) {
      const object = event.objects.get(label);
      if (!object) continue;
      if (action === 'hold') {
        object.status = 'reservedByToken';
        object.holdToken = holdToken ?? null;
      } else if (action === 'release') {
        object.status = 'free';
        object.holdToken = null;
        object.orderId = null;
      } else {
        object.status = 'booked';
        object.holdToken = null;
        object.orderId = orderId ?? object.orderId;
      }
    }
    if (request.query.expand !== 'objects') return reply.code(204).send();
    return reply.send({
      objects: Object.fromEntries([...new Set(labels)].map((label) => [label, this.#objectJson(event, label)])),
    });
  }

  #objectInfos(
    request: FastifyRequest<{ Params: { key: string }; Querystring: { label?: string | string[] } }>,
    reply: FastifyReply,
  ) {
    const event = this.#events.get(request.params.key);
    if (!event)
      return this.#error(reply, 404, [{ code: 'EVENT_NOT_FOUND', message: `Event not found: ${request.params.key}` }]);
    const requested = request.query.label;
    const labels =
      requested === undefined ? [...event.objects.keys()] : Array.isArray(requested) ? requested : [requested];
    const missing = labels.filter((label) => !event.objects.has(label));
    if (missing.length > 0) {
      return this.#error(
        reply,
        404,
        missing.map((label) => ({ code: 'OBJECT_NOT_FOUND', message: `Object not found: ${label}` })),
      );
    }
    return reply.send(Object.fromEntries(labels.map((label) => [label, this.#objectJson(event, label)])));
  }

  // ---- representations ---------------------------------------------------------------------------------------

  #objectJson(event: SeatEvent, label: string): Record<string, unknown> {
    const object = event.objects.get(label);
    const chartObject = this.#charts.get(event.chartKey)?.objects.get(label);
    const [parent, own] = label.includes('-')
      ? [label.slice(0, label.lastIndexOf('-')), label.slice(label.lastIndexOf('-') + 1)]
      : [null, label];
    return {
      label,
      labels: { own: { label: own, type: 'seat' }, ...(parent ? { parent: { label: parent, type: 'row' } } : {}) },
      ids: { own, ...(parent ? { parent } : {}) },
      status: object?.status ?? 'free',
      ...(object?.holdToken ? { holdToken: object.holdToken } : {}),
      ...(object?.orderId ? { orderId: object.orderId } : {}),
      categoryKey: chartObject?.categoryKey ?? null,
      categoryLabel: chartObject?.categoryLabel ?? null,
      forSale: true,
      objectType: 'seat',
      isAvailable: object?.status === 'free',
      availabilityReason: object?.status === 'free' ? 'available' : object?.status,
      bookAsAWhole: false,
    };
  }

  #eventJson(event: SeatEvent): Record<string, unknown> {
    return {
      id: event.id,
      key: event.key,
      chartKey: event.chartKey,
      createdOn: event.createdOn.toISOString(),
      updatedOn: null,
      supportsBestAvailable: true,
      forSaleConfig: null,
      isEventInSeason: false,
      objectCategories: null,
    };
  }

  #tokenJson(token: HoldToken): Record<string, unknown> {
    return {
      holdToken: token.token,
      expiresAt: token.expiresAt.toISOString(),
      expiresInSeconds: Math.max(0, Math.round((token.expiresAt.getTime() - Date.now()) / 1000)),
      workspaceKey: 'sandbox-workspace',
    };
  }

  #error(reply: FastifyReply, status: number, errors: Array<{ code: string; message: string }>) {
    return reply.code(status).send({ errors, messages: errors.map((e) => e.message), requestId: randomUUID(), status });
  }
}

/** Why this status change is refused for one object, or null when it is allowed. */
function refusal(
  action: 'hold' | 'release' | 'book',
  label: string,
  object: EventObject,
  holdToken: string | null,
  orderId: string | null,
): string | null {
  if (action === 'hold') {
    if (object.status === 'booked') return `${label} is already booked`;
    if (object.status === 'reservedByToken' && object.holdToken !== holdToken) {
      return `${label} is already held by another hold token`;
    }
    return null;
  }
  if (action === 'release') {
    if (holdToken && object.status === 'reservedByToken' && object.holdToken !== holdToken) {
      return `${label} is held by another hold token`;
    }
    return null;
  }
  if (object.status === 'booked') {
    return orderId !== null && object.orderId === orderId ? null : `${label} is already booked`;
  }
  if (object.status === 'reservedByToken' && object.holdToken !== holdToken) {
    return holdToken
      ? `${label} is held by another hold token`
      : `${label} is held; its hold token is required to book it`;
  }
  return null;
}
