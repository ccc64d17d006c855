import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { SCOPES } from '../domain/roles.js';
import { ApiKey } from './api-key.js';
import { User } from './user.js';
import { Workspace } from './workspace.js';

export const DEVICE_AUTHORIZATION_STATUSES = ['pending', 'approved', 'denied', 'consumed', 'expired'] as const;
export type DeviceAuthorizationStatus = (typeof DEVICE_AUTHORIZATION_STATUSES)[number];

/**
 * One OAuth 2.0 device authorization request (RFC 8628): a client asked for a key, a person approves or denies it on
 * the verification page, the client polls until then. The device code is stored hashed; the user code is short and
 * typed by people, so it is unique only among pending requests (an expired request gives its code back).
 */
export const DeviceAuthorization = defineEntity({
  name: 'DeviceAuthorization',
  tableName: 'device_authorizations',
  uniques: [{ name: 'device_authorizations_pending_user_code', properties: ['userCode'], where: "status = 'pending'" }],
  properties: {
    id: p.string().columnType('uuid').primary(),
    deviceCodeHash: p.string().length(64).unique(),
    /** Eight letters of the unambiguous alphabet, stored without the dash. */
    userCode: p.string().length(8),
    clientId: p.string().length(64),
    /**
     * The address the request came from (as the API saw it), shown on the approval page with the request's time so
     * the person can tell their own device's request from someone else's; nullable for requests made before.
     */
    requestedFrom: p.string().length(64).nullable(),
    scope: p.enum(SCOPES),
    status: p.enum(DEVICE_AUTHORIZATION_STATUSES),
    /** Seconds the client must wait between polls; grows by 5 at every poll that came too early. */
    intervalSeconds: p.integer(),
    lastPolledAt: p.datetime().columnType('timestamptz').nullable(),
    expiresAt: p.datetime().columnType('timestamptz'),
    /** Who decided, and the workspace the key acts in; set on approval or denial. */
    user: () => p.manyToOne(User).mapToPk().deleteRule('cascade').nullable(),
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade').nullable(),
    decidedAt: p.datetime().columnType('timestamptz').nullable(),
    /** The key handed to the client, once it exchanged the device code (its plaintext was shown only then). */
    apiKey: () => p.manyToOne(ApiKey).mapToPk().deleteRule('set null').nullable(),
    createdAt: p.datetime().columnType('timestamptz'),
  },
});
export type IDeviceAuthorization = InferEntity<typeof DeviceAuthorization>;
