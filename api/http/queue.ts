import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * Virtual queue (waiting room) of an event date, shared by every API process through Redis and surviving their
 * restarts. Each turn is a member of a sorted set scored by the instant it is admitted; joining computes that
 * instant atomically (Lua, Redis clock) as max(now, previous admission + 60 000 / admissionsPerMinute), so turns
 * are admitted first come, first served, at the configured rate, without any process keeping state.
 */
const JOIN = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = tonumber(ARGV[2])
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
local admitAt = now
if last > 0 and last + interval > now then admitAt = last + interval end
redis.call('SET', KEYS[2], admitAt)
redis.call('ZADD', KEYS[1], admitAt, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return {admitAt, now}
`;

const STATUS = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then return {-1, now, 0} end
score = tonumber(score)
local ahead = 0
if score > now then ahead = redis.call('ZCOUNT', KEYS[1], '(' .. now, '(' .. score) end
return {score, now, ahead}
`;

/** How long a queue's turns are remembered after the last join. */
const QUEUE_TTL_MS = 2 * 24 * 60 * 60_000;

const membersKey = (eventDateId: string) => `queue:${eventDateId}:turns`;
const lastKey = (eventDateId: string) => `queue:${eventDateId}:last-admission`;

export interface QueueTurn {
  token: string;
  /** Turns still waiting ahead of this one (0 once admitted). */
  position: number;
  admitted: boolean;
  admittedAt: string;
}

export async function joinQueue(redis: Redis, eventDateId: string, admissionsPerMinute: number): Promise<QueueTurn> {
  const token = randomBytes(18).toString('base64url');
  const interval = Math.max(1, Math.floor(60_000 / Math.max(1, admissionsPerMinute)));
  await redis.eval(JOIN, 2, membersKey(eventDateId), lastKey(eventDateId), token, interval, QUEUE_TTL_MS);
  const turn = await queueTurn(redis, eventDateId, token);
  return turn!;
}

/** The turn's standing now, or null for a token this date's queue never issued. */
export async function queueTurn(redis: Redis, eventDateId: string, token: string): Promise<QueueTurn | null> {
  const [score, now, ahead] = (await redis.eval(STATUS, 1, membersKey(eventDateId), token)) as [number, number, number];
  if (score < 0) return null;
  const admitted = score <= now;
  return { token, position: admitted ? 0 : ahead + 1, admitted, admittedAt: new Date(score).toISOString() };
}

export async function hasAdmittedTurn(redis: Redis, eventDateId: string, token: string | null): Promise<boolean> {
  if (!token) return false;
  return (await queueTurn(redis, eventDateId, token))?.admitted ?? false;
}
