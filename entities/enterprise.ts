import { randomBytes } from 'node:crypto';
import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { formatHostPattern, type HostPattern, parseHostPatterns } from '../domain/return-url.js';
import { baseProperties } from './common.js';
import { newId } from './ids.js';
import { decryptSecret, encryptSecret } from './webhook.js';
import { Workspace } from './workspace.js';

/**
 * An enterprise integration (issue 16): a company whose own system signs its users in and hands them to us with a
 * one-time SSO token (POST /api/customer-auth/enterprise-exchange). Operators manage enterprises with
 * `npm run operator -- enterprise …` (scripts/operator-enterprise.ts); the contract names no API for it.
 *
 * The signing secret is the HS256 key of the enterprise's tokens. We must read it back to verify signatures, so it
 * is encrypted at rest (AES-256-GCM with SECRETS_ENCRYPTION_KEY, as webhook signing secrets are) rather than hashed,
 * and shown once, when it is created or rotated. `returnUrlHosts` holds canonical host patterns
 * (domain/return-url.ts). A disabled enterprise's tokens are refused and its buyers' sessions were revoked.
 */
export const Enterprise = defineEntity({
  name: 'Enterprise',
  tableName: 'enterprises',
  properties: {
    ...baseProperties,
    name: p.string().length(120),
    /** `v1:<iv>:<tag>:<ciphertext>`, base64url parts (entities/webhook.ts encryptSecret). */
    secretCiphertext: p.text(),
    returnUrlHosts: p.json<string[]>(),
    disabledAt: p.datetime().columnType('timestamptz').nullable(),
  },
});
export type IEnterprise = InferEntity<typeof Enterprise>;

/** A workspace an enterprise serves: its buyers may purchase there, and its returnUrl allowlist applies there. */
export const EnterpriseWorkspace = defineEntity({
  name: 'EnterpriseWorkspace',
  tableName: 'enterprise_workspaces',
  uniques: [{ properties: ['enterprise', 'workspace'] }],
  properties: {
    id: p.string().columnType('uuid').primary(),
    enterprise: () => p.manyToOne(Enterprise).mapToPk().deleteRule('cascade'),
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade').index(),
    createdAt: p.datetime().columnType('timestamptz'),
  },
});
export type IEnterpriseWorkspace = InferEntity<typeof EnterpriseWorkspace>;

/**
 * A one-time SSO token already exchanged, by its `jti`, kept until the token could no longer be accepted anyway
 * (its `exp` plus the clock skew allowance): the unique key is what makes a replay fail, even when two copies of
 * the token race.
 */
export const EnterpriseTokenUse = defineEntity({
  name: 'EnterpriseTokenUse',
  tableName: 'enterprise_token_uses',
  uniques: [{ properties: ['enterprise', 'jti'] }],
  indexes: [{ properties: ['enterprise', 'expiresAt'] }],
  properties: {
    id: p.string().columnType('uuid').primary(),
    enterprise: () => p.manyToOne(Enterprise).mapToPk().deleteRule('cascade'),
    jti: p.string().length(255),
    expiresAt: p.datetime().columnType('timestamptz'),
    usedAt: p.datetime().columnType('timestamptz'),
  },
});
export type IEnterpriseTokenUse = InferEntity<typeof EnterpriseTokenUse>;

/** A generated signing secret: 256 random bits, prefixed so people recognise it. Used as UTF-8 bytes for HS256. */
export const generateEnterpriseSecret = (): string => `ent_sk_${randomBytes(32).toString('base64url')}`;

/** What purchases through an enterprise session may do: where they may buy, and where they may return to. */
export interface EnterpriseScope {
  enterpriseId: string;
  servedWorkspaceIds: string[];
  returnUrlAllowlist: HostPattern[];
}

/** The scope of an enterprise session; a disabled or deleted enterprise serves nothing. */
export async function loadEnterpriseScope(em: EntityManager, enterpriseId: string): Promise<EnterpriseScope> {
  const enterprise = await em.findOne(Enterprise, { id: enterpriseId });
  if (!enterprise || enterprise.disabledAt) {
    return { enterpriseId, servedWorkspaceIds: [], returnUrlAllowlist: [] };
  }
  const served = await em.find(EnterpriseWorkspace, { enterprise: enterpriseId });
  return {
    enterpriseId,
    servedWorkspaceIds: served.map((row) => row.workspace),
    returnUrlAllowlist: parseHostPatterns(enterprise.returnUrlHosts),
  };
}

/** The enterprise named by a token's `iss`, with its secret in plaintext, or null when unknown or disabled. */
export async function findActiveEnterpriseSecret(
  em: EntityManager,
  enterpriseId: string,
  encryptionKey: string,
): Promise<{ id: string; secret: string } | null> {
  const enterprise = await em.findOne(Enterprise, { id: enterpriseId, disabledAt: null });
  if (!enterprise) return null;
  return { id: enterprise.id, secret: decryptSecret(enterprise.secretCiphertext, encryptionKey) };
}

/**
 * Records the first use of a token id; false when it was already used (a replay). Also forgets the uses of this
 * enterprise's tokens that have expired, which nothing could replay any more.
 */
export async function claimTokenUse(
  em: EntityManager,
  input: { enterpriseId: string; jti: string; acceptableUntil: Date },
): Promise<boolean> {
  await em.execute('delete from enterprise_token_uses where enterprise_id = ? and expires_at < now()', [
    input.enterpriseId,
  ]);
  const inserted = await em.execute<{ id: string }[]>(
    `insert into enterprise_token_uses (id, enterprise_id, jti, expires_at, used_at) values (?, ?, ?, ?, now())
     on conflict (enterprise_id, jti) do nothing returning id`,
    [newId(), input.enterpriseId, input.jti, input.acceptableUntil],
  );
  return inserted.length > 0;
}

export interface EnterpriseBuyer {
  id: string;
  email: string;
  name: string | null;
  phone: string | null;
}

/**
 * The buyer an enterprise knows as `subject`, created on first sight. The enterprise is the source of truth for
 * its users, so their email and name follow its latest token. One upsert, so two first tokens of one user racing
 * still make one buyer. Never matched by email: another enterprise, or a first-party buyer, may use the same
 * address, and an enterprise must not be able to reach their tickets by claiming it.
 */
export async function upsertEnterpriseBuyer(
  em: EntityManager,
  input: { enterpriseId: string; subject: string; email: string; name: string | null },
): Promise<EnterpriseBuyer> {
  const [row] = await em.execute<EnterpriseBuyer[]>(
    `insert into buyers (id, created_at, updated_at, email, name, enterprise_id, enterprise_subject)
     values (?, now(), now(), ?, ?, ?, ?)
     on conflict (enterprise_id, enterprise_subject) do update
       set email = excluded.email, name = coalesce(excluded.name, buyers.name), updated_at = now()
     returning id, email, name, phone`,
    [newId(), input.email, input.name, input.enterpriseId, input.subject],
  );
  if (!row) throw new Error('the buyer upsert returned no row');
  return row;
}

export interface EnterpriseSettings {
  name: string;
  workspaceIds: string[];
  returnUrlHosts: string[];
}

/** Checks the workspaces exist and the hosts are patterns; returns the canonical hosts. */
async function validatedSettings(
  em: EntityManager,
  settings: Partial<EnterpriseSettings>,
): Promise<{ returnUrlHosts?: string[] }> {
  if (settings.name !== undefined && (settings.name.trim().length < 2 || settings.name.trim().length > 120)) {
    throw new Error('the name must be 2 to 120 characters');
  }
  if (settings.workspaceIds) {
    const found = await em.find(Workspace, { id: { $in: settings.workspaceIds } });
    const missing = settings.workspaceIds.filter((id) => !found.some((workspace) => workspace.id === id));
    if (missing.length > 0) throw new Error(`no workspace ${missing.join(', ')}`);
  }
  if (!settings.returnUrlHosts) return {};
  return { returnUrlHosts: [...new Set(parseHostPatterns(settings.returnUrlHosts).map(formatHostPattern))] };
}

async function replaceServedWorkspaces(em: EntityManager, enterpriseId: string, workspaceIds: string[]) {
  await em.nativeDelete(EnterpriseWorkspace, { enterprise: enterpriseId });
  for (const workspaceId of new Set(workspaceIds)) {
    em.create(EnterpriseWorkspace, {
      id: newId(),
      enterprise: enterpriseId,
      workspace: workspaceId,
      createdAt: new Date(),
    });
  }
}

/** Creates an enterprise; the returned secret exists only in this return value (the row keeps it encrypted). */
export async function createEnterprise(
  em: EntityManager,
  settings: EnterpriseSettings,
  encryptionKey: string,
): Promise<{ enterprise: IEnterprise; secret: string }> {
  const { returnUrlHosts = [] } = await validatedSettings(em, settings);
  return em.transactional(async (tx) => {
    const secret = generateEnterpriseSecret();
    const enterprise = tx.create(Enterprise, {
      id: newId(),
      name: settings.name.trim(),
      secretCiphertext: encryptSecret(secret, encryptionKey),
      returnUrlHosts,
      disabledAt: null,
    });
    await replaceServedWorkspaces(tx, enterprise.id, settings.workspaceIds);
    return { enterprise, secret };
  });
}

/** Changes the given settings; the lists given replace the current ones. */
export async function updateEnterprise(
  em: EntityManager,
  enterpriseId: string,
  settings: Partial<EnterpriseSettings>,
): Promise<IEnterprise> {
  const { returnUrlHosts } = await validatedSettings(em, settings);
  return em.transactional(async (tx) => {
    const enterprise = await tx.findOneOrFail(Enterprise, { id: enterpriseId });
    if (settings.name !== undefined) enterprise.name = settings.name.trim();
    if (returnUrlHosts) enterprise.returnUrlHosts = returnUrlHosts;
    if (settings.workspaceIds) await replaceServedWorkspaces(tx, enterprise.id, settings.workspaceIds);
    return enterprise;
  });
}

/** A new secret; tokens signed with the old one are refused from now on. Shown once, like the first. */
export async function rotateEnterpriseSecret(
  em: EntityManager,
  enterpriseId: string,
  encryptionKey: string,
): Promise<string> {
  const enterprise = await em.findOneOrFail(Enterprise, { id: enterpriseId });
  const secret = generateEnterpriseSecret();
  enterprise.secretCiphertext = encryptSecret(secret, encryptionKey);
  await em.flush();
  return secret;
}

/**
 * Disables an enterprise (or enables it again). Disabling also ends its buyers' live sessions: a session outliving
 * the integration that vouched for it would keep buying on its behalf.
 */
export async function setEnterpriseDisabled(em: EntityManager, enterpriseId: string, disabled: boolean) {
  await em.transactional(async (tx) => {
    const enterprise = await tx.findOneOrFail(Enterprise, { id: enterpriseId });
    enterprise.disabledAt = disabled ? (enterprise.disabledAt ?? new Date()) : null;
    if (disabled) {
      await tx.execute(
        `update buyer_sessions set revoked_at = now()
          where revoked_at is null and buyer_id in (select id from buyers where enterprise_id = ?)`,
        [enterpriseId],
      );
    }
  });
}

/** Workspaces an enterprise serves, for operators' listings. */
export async function servedWorkspaceIds(em: EntityManager, enterpriseId: string): Promise<string[]> {
  const rows = await em.find(EnterpriseWorkspace, { enterprise: enterpriseId }, { orderBy: { createdAt: 'asc' } });
  return rows.map((row) => row.workspace);
}
