import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { AppError } from '../../domain/errors.js';
import { newId } from '../../entities/ids.js';
import { decryptSecret, encryptSecret } from '../../entities/webhook.js';
import type { ApiServices } from '../services.js';
import { presentedSessionToken, resolveBuyerSession } from './customer-auth.js';

const KEY_TTL_MS = 24 * 60 * 60 * 1000;
const WAIT_FOR_FIRST_MS = 30_000;
const POLL_MS = 100;
/**
 * A record still `in_progress` this long after it was claimed belongs to a request whose process died before it
 * answered (nothing deletes it then): a retry with the same body may take it over instead of being told "still
 * running" for a day. Longer than any request runs (the reserve wait is a minute).
 */
const STALE_IN_PROGRESS_MS = 2 * 60_000;

/** The authenticated principal a request's `Idempotency-Key` belongs to, and the key itself. */
export interface IdempotencyKey {
  scope: string;
  key: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    idempotency: { recordId: string } | null;
    /** Set on a POST that carried a valid `Idempotency-Key`; routes derive business ids (a sale id) from it. */
    idempotencyKey: IdempotencyKey | null;
  }
  interface FastifyContextConfig {
    /**
     * Where the response carries a credential shown once (`data.key` of a minted API key, `access_token` of a device
     * grant): never kept in the replay record, so a replay within the key's 24 hours answers without it.
     */
    credentialFields?: readonly string[];
  }
}

/** The warning a replay carries when the first response held a credential it does not repeat. */
const CREDENTIAL_WITHHELD = {
  code: 'CREDENTIAL_NOT_REPLAYED',
  message:
    'The first response to this Idempotency-Key carried a credential shown only once; a replay does not repeat it. ' +
    'If it was lost, revoke it and create another.',
};

/** The body with each credential path set to null (paths are dot-separated object keys). */
function withoutCredentials(body: unknown, paths: readonly string[]): unknown {
  if (typeof body !== 'object' || body === null) return body;
  const copy: unknown = structuredClone(body);
  for (const path of paths) {
    const keys = path.split('.');
    const last = keys.pop();
    let node: unknown = copy;
    for (const key of keys) node = typeof node === 'object' && node !== null ? Reflect.get(node, key) : undefined;
    if (last !== undefined && typeof node === 'object' && node !== null && Reflect.has(node, last)) {
      Reflect.set(node, last, null);
    }
  }
  return copy;
}

/**
 * The principal an idempotency key belongs to, so that two callers who pick the same key never see each other's
 * responses or reach each other's sales: the buyer of a verified session on customer routes (not the raw token,
 * which changes at every sign-in, and not the address, which a household shares), the API key on organizer routes,
 * a buyer session if one is presented on public routes, else the client address.
 */
async function callerScope(request: FastifyRequest): Promise<string> {
  if (request.customer) {
    const pinned = request.customer.pinnedWorkspaceId;
    return pinned ? `buyer:${request.customer.buyerId}:ws:${pinned}` : `buyer:${request.customer.buyerId}`;
  }
  if (request.organizer) return `key:${request.organizer.apiKeyId}`;
  const token = presentedSessionToken(request);
  const buyer = token ? await resolveBuyerSession(request, token) : null;
  if (buyer) return `buyer:${buyer.buyerId}`;
  return `ip:${request.ip}`;
}

function requestFingerprint(request: FastifyRequest): string {
  return createHash('sha256')
    .update(request.method)
    .update('\n')
    .update(request.url)
    .update('\n')
    .update(JSON.stringify(request.body ?? null))
    .digest('hex');
}

interface StoredRecord {
  id: string;
  request_hash: string;
  state: 'in_progress' | 'completed';
  response_status: number | null;
  response_body: unknown;
  expires_at: Date;
}

/**
 * `Idempotency-Key` on any POST (as Stripe and pretix offer): the first request does the work and its response
 * is stored; a retry with the same key and body gets that response again (`Idempotent-Replayed: true`), even
 * while the first is still running; the same key with another body is refused with 422. Responses of 5xx are not
 * stored, so a retry after a server failure does the work again: work that must still happen once (a checkout)
 * derives its ids from `request.idempotencyKey`, so the second run reaches what the first one made. Keys live 24
 * hours, per principal (see callerScope); nothing is replayed before the caller is authenticated.
 */
export const idempotencyPlugin = fp(
  async (app: FastifyInstance, services: ApiServices) => {
    const db = () => services.orm.em.getConnection();
    app.decorateRequest('idempotency', null);
    app.decorateRequest('idempotencyKey', null);

    async function claim(
      scope: string,
      key: string,
      hash: string,
    ): Promise<{ claimed: string } | { existing: StoredRecord }> {
      const id = newId();
      const now = new Date();
      const inserted = await db().execute<{ id: string }[]>(
        `insert into idempotency_records (id, scope, key, request_hash, state, created_at, expires_at)
         values (?, ?, ?, ?, 'in_progress', ?, ?)
         on conflict (scope, key) do update set id = excluded.id, request_hash = excluded.request_hash,
           state = 'in_progress', response_status = null, response_body = null,
           created_at = excluded.created_at, expires_at = excluded.expires_at
         where idempotency_records.expires_at <= now()
            or (idempotency_records.state = 'in_progress' and idempotency_records.created_at <= ?
                and idempotency_records.request_hash = excluded.request_hash)
         returning id`,
        [
          id,
          scope,
          key,
          hash,
          now,
          new Date(now.getTime() + KEY_TTL_MS),
          new Date(now.getTime() - STALE_IN_PROGRESS_MS),
        ],
      );
      if (inserted.length > 0) return { claimed: id };
      const rows = await db().execute<StoredRecord[]>(
        'select id, request_hash, state, response_status, response_body, expires_at from idempotency_records where scope = ? and key = ?',
        [scope, key],
      );
      const existing = rows[0];
      if (!existing) return claim(scope, key, hash);
      return { existing };
    }

    async function waitForCompletion(recordId: string): Promise<StoredRecord | null> {
      const deadline = Date.now() + WAIT_FOR_FIRST_MS;
      while (Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        const rows = await db().execute<StoredRecord[]>(
          'select id, request_hash, state, response_status, response_body, expires_at from idempotency_records where id = ?',
          [recordId],
        );
        const row = rows[0];
        if (!row) return null;
        if (row.state === 'completed') return row;
      }
      return null;
    }

    // Stored responses are sealed at rest with the secrets key, as every other secret is, and opened only to replay
    // them to the same principal. Credentials a route marks (config.credentialFields) are not stored at all.
    const seal = (body: unknown): string => encryptSecret(JSON.stringify(body), services.env.SECRETS_ENCRYPTION_KEY);
    const unseal = (stored: unknown): string =>
      typeof stored === 'string' ? decryptSecret(stored, services.env.SECRETS_ENCRYPTION_KEY) : JSON.stringify(stored);

    function replay(request: FastifyRequest, reply: FastifyReply, record: StoredRecord): FastifyReply {
      const withheld = request.routeOptions.config.credentialFields ?? [];
      let body = unseal(record.response_body);
      if (withheld.length > 0) {
        const parsed: unknown = JSON.parse(body);
        if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
          const warnings: unknown = Reflect.get(parsed, 'warnings');
          body = JSON.stringify({
            ...parsed,
            warnings: [...(Array.isArray(warnings) ? warnings : []), CREDENTIAL_WITHHELD],
          });
        }
        reply.header('idempotent-credential-withheld', withheld.join(', '));
      }
      return reply
        .status(record.response_status ?? 200)
        .header('idempotent-replayed', 'true')
        .header('content-type', 'application/json; charset=utf-8')
        .send(body);
    }

    app.addHook('preHandler', async (request, reply) => {
      if (request.method !== 'POST') return;
      const header = request.headers['idempotency-key'];
      if (header === undefined) return;
      const key = Array.isArray(header) ? header[0] : header;
      if (!key || key.length > 255 || !/^[\x21-\x7e]+$/.test(key)) {
        throw new AppError('VALIDATION_FAILED', 'Idempotency-Key must be 1–255 visible ASCII characters', {
          details: { fields: [{ field: 'headers.idempotency-key', message: 'invalid' }] },
        });
      }
      const scope = await callerScope(request);
      request.idempotencyKey = { scope, key };
      const hash = requestFingerprint(request);
      const outcome = await claim(scope, key, hash);
      if ('claimed' in outcome) {
        request.idempotency = { recordId: outcome.claimed };
        return;
      }
      const existing = outcome.existing;
      if (existing.request_hash !== hash) {
        throw new AppError(
          'IDEMPOTENCY_KEY_REUSED',
          'This Idempotency-Key was already used with a different request; use a new key for a new request',
        );
      }
      const finished = existing.state === 'completed' ? existing : await waitForCompletion(existing.id);
      if (!finished) {
        throw new AppError(
          'IDEMPOTENCY_REQUEST_IN_PROGRESS',
          'The first request with this Idempotency-Key is still running; retry shortly',
          {
            headers: { 'retry-after': '1' },
          },
        );
      }
      return replay(request, reply, finished);
    });

    app.addHook('onSend', async (request, reply, payload) => {
      const claimed = request.idempotency;
      if (!claimed) return payload;
      request.idempotency = null;
      if (reply.statusCode >= 500) {
        await db().execute('delete from idempotency_records where id = ?', [claimed.recordId]);
        return payload;
      }
      let body: unknown = null;
      if (typeof payload === 'string' && payload !== '') {
        try {
          body = JSON.parse(payload);
        } catch {
          body = payload;
        }
      }
      // A credential shown once is never written to the record: a replay answers without it (see replay).
      const credentialFields = request.routeOptions.config.credentialFields ?? [];
      const kept = credentialFields.length > 0 ? withoutCredentials(body, credentialFields) : body;
      await db().execute(
        `update idempotency_records set state = 'completed', response_status = ?, response_body = ? where id = ?`,
        [reply.statusCode, JSON.stringify(seal(kept)), claimed.recordId],
      );
      return payload;
    });

    // A request that dies before sending (client gone, crash in a hook) must not leave the key locked for a day.
    app.addHook('onResponse', async (request) => {
      if (request.idempotency) {
        await db().execute(`delete from idempotency_records where id = ? and state = 'in_progress'`, [
          request.idempotency.recordId,
        ]);
      }
    });
  },
  { name: 'idempotency', dependencies: ['auth'] },
);
