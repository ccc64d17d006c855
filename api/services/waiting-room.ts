/**
 * The waiting room of a high-demand date (a date flagged virtualQueue), shared by every API process through Redis
 * and surviving their restarts: no process keeps a turn.
 *
 * A turn goes WAITING → ADMITTED → CLAIMED (an order with it is reserving) → USED (the order reserved; the buyer is
 * paying) → DONE, or ADMITTED/CLAIMED → EXPIRED when not used within its window. Buyers are admitted in join order
 * (a sorted set scored by a join counter), as many as the admission controller allows active at once
 * (admission-controller.ts), at most the units still obtainable, and never while the date is sold out. Every change
 * of a turn runs in one Lua script, so two processes (or two tabs) never admit, claim or expire the same turn twice.
 *
 * Admission runs inside the scripts every poll, join and claim call (first expiring turns whose window passed), so a
 * freed slot goes to the next buyer at the next request of anyone; a ticker (waiting-room-ticker.ts) measures the
 * stack and the stock and writes the knobs the scripts read.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { type Admission, estimatedWaitSeconds } from './admission-controller.js';

/**
 * Where a room lives and how long an admitted buyer has to reserve (WAITING_ROOM_TURN_MS, 2 minutes by default).
 * A room takes the window of the process whose join opened it and keeps it, whichever process admits later.
 */
export interface RoomConfig {
  redis: Redis;
  turnWindowMs: number;
}
/** How long a claimed turn may stay in flight: a reservation answers or gives up within a minute. */
export const CLAIM_WINDOW_MS = 90_000;
/** How long a buyer who reserved counts as active (paying) when their sale is not seen finished before. */
export const PAYING_WINDOW_MS = 5 * 60_000;
/** How often a waiting browser should ask again: within a second, with the answer's own time, to hear sold out. */
export const POLL_AFTER_MS = 800;
/** Turns, counters and the room itself are forgotten this long after the last change. */
const ROOM_TTL_MS = 2 * 24 * 60 * 60_000;

/** Every date with a room that may still need ticking. */
export const ROOMS_KEY = 'wr:rooms';

/** Keys of one date's room, under one hash tag so a cluster keeps them on one node. */
export function roomKeys(eventDateId: string) {
  const prefix = `wr:{${eventDateId}}:`;
  return {
    prefix,
    seq: `${prefix}seq`,
    waiting: `${prefix}waiting`,
    active: `${prefix}active`,
    paying: `${prefix}paying`,
    sessions: `${prefix}sessions`,
    knobs: `${prefix}knobs`,
    leader: `${prefix}leader`,
  };
}

/**
 * Shared head of every script. KEYS: waiting, active, paying, knobs. ARGV[1]: turn key prefix, ARGV[2]: turn window
 * (ms), ARGV[3]: room TTL (ms). Defines `now`, `advance()` (expire, then admit) and `standing(token)`.
 */
const HEAD = `
local waiting, active, paying, knobs = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local prefix, turnWindow, roomTtl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function turnKey(token) return prefix .. 't:' .. token end
local function knob(name, default)
  local value = redis.call('HGET', knobs, name)
  if value then return tonumber(value) end
  return default
end
-- A room keeps the turn window of the process that opened it, whichever process admits later.
turnWindow = knob('turnWindow', turnWindow)

local function advance()
  -- Expire: an admitted or claimed turn whose window passed, and a paying buyer counted long enough.
  local due = redis.call('ZRANGEBYSCORE', active, '-inf', now)
  for _, token in ipairs(due) do
    local key = turnKey(token)
    local state = redis.call('HGET', key, 's')
    if state == 'A' or state == 'C' then
      redis.call('HSET', key, 's', 'X', 'x', now)
      redis.call('HINCRBY', knobs, 'expired', 1)
    elseif state == 'U' then
      redis.call('HSET', key, 's', 'D')
    end
    redis.call('ZREM', active, token)
    redis.call('HDEL', paying, token)
  end
  if knob('soldOut', 0) == 1 then return end
  -- Refill the admission bucket (at most one second of admissions banked).
  local rate = knob('rate', 10)
  local tokens = knob('tokens', rate)
  local refilled = knob('refilledAt', now)
  tokens = math.min(rate, tokens + (now - refilled) * rate / 1000)
  redis.call('HSET', knobs, 'tokens', tokens, 'refilledAt', now)
  local activeCount = redis.call('ZCARD', active)
  local unused = activeCount - redis.call('HLEN', paying)
  local free = math.min(knob('target', 20) - activeCount, knob('obtainable', 0) - unused, math.floor(tokens))
  if free <= 0 then return end
  local admitted = redis.call('ZPOPMIN', waiting, free)
  local count = 0
  for i = 1, #admitted, 2 do
    local token = admitted[i]
    local key = turnKey(token)
    redis.call('HSET', key, 's', 'A', 'a', now, 'e', now + turnWindow)
    redis.call('PEXPIRE', key, roomTtl)
    redis.call('ZADD', active, now + turnWindow, token)
    count = count + 1
  end
  if count > 0 then
    redis.call('HINCRBY', knobs, 'admittedTotal', count)
    redis.call('HSET', knobs, 'tokens', tokens - count, 'lastAdmittedSeq', admitted[#admitted])
  end
end

-- {state, seq, position, admittedAt, expiresAt, soldOut, sale, admissionRate, target, turnWindow}; the rate as a
-- string (a Lua number in a reply is cut to an integer).
local function standing(token)
  local key = turnKey(token)
  local turn = redis.call('HMGET', key, 's', 'q', 'a', 'e', 'sale')
  if not turn[1] then return {'', 0, 0, 0, 0, 0, '', '0', 0, 0} end
  local position = 0
  if turn[1] == 'W' then
    local rank = redis.call('ZRANK', waiting, token)
    if rank then position = rank + 1 end
  end
  return {turn[1], tonumber(turn[2]), position, tonumber(turn[3] or '0'), tonumber(turn[4] or '0'), knob('soldOut', 0),
    turn[5] or '', redis.call('HGET', knobs, 'admissionRate') or '0', knob('target', 20), turnWindow}
end

local function keepRoom()
  for _, key in ipairs(KEYS) do redis.call('PEXPIRE', key, roomTtl) end
end
`;

/** KEYS += seq, sessions. ARGV[4]: new token, ARGV[5]: buyer session ('' when anonymous), ARGV[6]: token presented. */
const JOIN = `${HEAD}
local seqKey, sessions = KEYS[5], KEYS[6]
local fresh, session, presented = ARGV[4], ARGV[5], ARGV[6]
local function live(token)
  if not token or token == '' then return false end
  local state = redis.call('HGET', turnKey(token), 's')
  return state == 'W' or state == 'A' or state == 'C'
end
advance()
-- One live turn per buyer session, and a browser that rejoins with its live token keeps its place.
if live(presented) then return {presented, unpack(standing(presented))} end
if session ~= '' then
  local existing = redis.call('HGET', sessions, session)
  if live(existing) then return {existing, unpack(standing(existing))} end
end
redis.call('HSETNX', knobs, 'turnWindow', turnWindow)
local seq = redis.call('INCR', seqKey)
redis.call('HSET', turnKey(fresh), 's', 'W', 'q', seq, 'j', now)
redis.call('PEXPIRE', turnKey(fresh), roomTtl)
redis.call('ZADD', waiting, seq, fresh)
if session ~= '' then redis.call('HSET', sessions, session, fresh) end
keepRoom()
advance()
return {fresh, unpack(standing(fresh))}
`;

const POLL = `${HEAD}
advance()
return standing(ARGV[4])
`;

/**
 * ARGV[4]: token, ARGV[5]: the sale id the order will make ('' when unknown). An admitted turn becomes CLAIMED; a
 * turn already USED by that same sale (a keyed retry) passes again. Returns {verdict, state}.
 */
const CLAIM = `${HEAD}
advance()
local token, sale = ARGV[4], ARGV[5]
local key = turnKey(token)
local turn = redis.call('HMGET', key, 's', 'e', 'sale')
if turn[1] == 'A' then
  redis.call('HSET', key, 's', 'C')
  redis.call('ZADD', active, math.max(tonumber(turn[2]), now + ${CLAIM_WINDOW_MS}), token)
  return {'claimed', 'C'}
end
if turn[1] == 'U' and sale ~= '' and turn[3] == sale then return {'same-sale', 'U'} end
return {'refused', turn[1] or ''}
`;

/** ARGV[4]: token, ARGV[5]: sale id, ARGV[6]: units reserved, ARGV[7]: paying window (ms). */
const USED = `${HEAD}
local token, sale, units, payingWindow = ARGV[4], ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
local key = turnKey(token)
local state = redis.call('HGET', key, 's')
if state ~= 'C' and state ~= 'X' then return 0 end
redis.call('HSET', key, 's', 'U', 'sale', sale, 'u', now)
redis.call('ZADD', active, now + payingWindow, token)
redis.call('HSET', paying, token, sale)
-- Until the next tick reads the stock again, the units this sale took are no longer obtainable. The last one sold
-- says sold out at once (its hold lasts the payment window, far past the horizon); the next tick, which also sees
-- lapsed holds and holds about to lapse, confirms or clears it.
if redis.call('HINCRBY', knobs, 'obtainable', -units) <= 0 then redis.call('HSET', knobs, 'soldOut', 1) end
redis.call('HINCRBY', knobs, 'usedTotal', 1)
return 1
`;

/** ARGV[4]: token. A claim whose order was not made gives the turn back, within its own window. */
const RELEASE = `${HEAD}
local key = turnKey(ARGV[4])
local turn = redis.call('HMGET', key, 's', 'e')
if turn[1] ~= 'C' then return 0 end
local expires = tonumber(turn[2])
if expires <= now then
  redis.call('HSET', key, 's', 'X', 'x', now)
  redis.call('ZREM', active, ARGV[4])
  return 0
end
redis.call('HSET', key, 's', 'A')
redis.call('ZADD', active, expires, ARGV[4])
return 1
`;

/** ARGV[4..]: tokens of paying buyers whose sale is finished (confirmed, abandoned, cancelled). */
const FINISH = `${HEAD}
for i = 4, #ARGV do
  local token = ARGV[i]
  if redis.call('HGET', turnKey(token), 's') == 'U' then redis.call('HSET', turnKey(token), 's', 'D') end
  redis.call('ZREM', active, token)
  redis.call('HDEL', paying, token)
end
advance()
return 1
`;

/**
 * Knobs the ticker writes (ARGV[5..] name/value pairs), then admits with them at once. ARGV[4]: the usedTotal the
 * ticker saw before it read the stock; when a turn was used since, the stock it read may predate that sale, so the
 * obtainable count (and sold-out flag) USED set are kept rather than overwritten with stale ones.
 */
const SET_KNOBS = `${HEAD}
local stale = tostring(redis.call('HGET', knobs, 'usedTotal') or '0') ~= ARGV[4]
for i = 5, #ARGV, 2 do
  local stock = ARGV[i] == 'obtainable' or ARGV[i] == 'soldOut'
  if not (stale and stock) then redis.call('HSET', knobs, ARGV[i], ARGV[i + 1]) end
end
keepRoom()
advance()
return {redis.call('ZCARD', waiting), redis.call('ZCARD', active), redis.call('HLEN', paying), knob('soldOut', 0), knob('lastAdmittedSeq', 0)}
`;

const scripts = { JOIN, POLL, CLAIM, USED, RELEASE, FINISH, SET_KNOBS } as const;
type ScriptName = keyof typeof scripts;
const digests = Object.fromEntries(
  Object.entries(scripts).map(([name, source]) => [name, createHash('sha1').update(source).digest('hex')]),
) as Record<ScriptName, string>;

/** Runs a script by digest, loading it on NOSCRIPT (a restarted Redis forgets its script cache). */
async function run(redis: Redis, name: ScriptName, keys: string[], args: Array<string | number>): Promise<unknown> {
  try {
    return await redis.evalsha(digests[name], keys.length, ...keys, ...args);
  } catch (error) {
    if (!(error instanceof Error) || !error.message.includes('NOSCRIPT')) throw error;
    return redis.eval(scripts[name], keys.length, ...keys, ...args);
  }
}

function head(room: RoomConfig, eventDateId: string): { keys: string[]; args: Array<string | number> } {
  const keys = roomKeys(eventDateId);
  return {
    keys: [keys.waiting, keys.active, keys.paying, keys.knobs],
    args: [keys.prefix, room.turnWindowMs, ROOM_TTL_MS],
  };
}

export type TurnStatus = 'waiting' | 'admitted' | 'reserving' | 'used' | 'expired' | 'sold_out';

export interface QueueTurn {
  token: string;
  status: TurnStatus;
  /** Turns waiting ahead of this one plus one while waiting; 0 otherwise. */
  position: number;
  /** Whether an order may be placed with this turn now. */
  admitted: boolean;
  admittedAt: string | null;
  /** Instant an admitted turn lapses if no order uses it. */
  turnExpiresAt: string | null;
  /** Expected wait while waiting, from the measured admission rate; 0 once admitted, null when it will not come. */
  estimatedWaitSeconds: number | null;
  pollAfterMs: number;
}

type RawStanding = [string, number, number, number, number, number, string, string, number, number];

function toTurn(token: string, raw: RawStanding): QueueTurn {
  const [state, , position, admittedAt, expiresAt, soldOut, , admissionRate, targetActive, turnWindowMs] = raw;
  const isoOrNull = (ms: number) => (ms > 0 ? new Date(ms).toISOString() : null);
  const status: TurnStatus =
    soldOut === 1 && (state === 'W' || state === 'A')
      ? 'sold_out'
      : ({ W: 'waiting', A: 'admitted', C: 'reserving', U: 'used', D: 'used', X: 'expired' } as const)[
          state as 'W' | 'A' | 'C' | 'U' | 'D' | 'X'
        ];
  let wait: number | null = null;
  if (status === 'waiting') {
    wait = estimatedWaitSeconds(position, {
      admissionsPerSecond: Number(admissionRate),
      targetActive,
      turnSeconds: turnWindowMs / 1000,
    });
  } else if (status === 'admitted') {
    wait = 0;
  }
  return {
    token,
    status,
    position: status === 'waiting' ? position : 0,
    admitted: status === 'admitted',
    admittedAt: state === 'W' ? null : isoOrNull(admittedAt),
    turnExpiresAt: status === 'admitted' ? isoOrNull(expiresAt) : null,
    estimatedWaitSeconds: wait,
    pollAfterMs: POLL_AFTER_MS,
  };
}

/**
 * What a waiting turn reads once its date has sold out, as `toTurn` answers a waiting or admitted turn of a sold-out
 * room: nothing to wait for, no position, no estimate. A long poll woken by the room's sold-out signal answers this
 * without asking Redis again: at the moment a date sells out every held poll wakes at once (19,000 of them in the crowd
 * bench), and one Redis script each, run one after another, took Redis about 2 s to get through.
 */
export function soldOutTurn(waiting: QueueTurn): QueueTurn {
  return {
    token: waiting.token,
    status: 'sold_out',
    position: 0,
    admitted: false,
    admittedAt: null,
    turnExpiresAt: null,
    estimatedWaitSeconds: null,
    pollAfterMs: POLL_AFTER_MS,
  };
}

/**
 * Joins the room at the back, or answers the live turn the buyer session (or the presented token) already has: one
 * live turn per buyer session.
 */
export async function joinRoom(
  room: RoomConfig,
  eventDateId: string,
  who: { buyerSession: string | null; presentedToken: string | null },
): Promise<QueueTurn> {
  const keys = roomKeys(eventDateId);
  const { keys: headKeys, args } = head(room, eventDateId);
  const fresh = randomBytes(18).toString('base64url');
  const [raw] = await Promise.all([
    run(
      room.redis,
      'JOIN',
      [...headKeys, keys.seq, keys.sessions],
      [...args, fresh, who.buyerSession ?? '', who.presentedToken ?? ''],
    ) as Promise<[string, ...RawStanding]>,
    room.redis.sadd(ROOMS_KEY, eventDateId),
  ]);
  const [token, ...standing] = raw;
  return toTurn(token, standing as RawStanding);
}

/** The turn's standing now (admitting whoever is due first), or null for a token this date's room never issued. */
export async function turnStanding(room: RoomConfig, eventDateId: string, token: string): Promise<QueueTurn | null> {
  return (await watchedTurn(room, eventDateId, token))?.turn ?? null;
}

/** The turn's standing with its join number, which a long-poll waits on (waiting-room-watch.ts). */
export async function watchedTurn(
  room: RoomConfig,
  eventDateId: string,
  token: string,
): Promise<{ turn: QueueTurn; seq: number } | null> {
  const { keys, args } = head(room, eventDateId);
  const [raw] = await Promise.all([
    run(room.redis, 'POLL', keys, [...args, token]) as Promise<RawStanding>,
    // A room the ticker let go of while a join was landing is named again by its waiting buyers.
    room.redis.sadd(ROOMS_KEY, eventDateId),
  ]);
  if (raw[0] === '') return null;
  return { turn: toTurn(token, raw), seq: raw[1] };
}

/** A claimed turn: the order placed with it either reserved (`used`) or not (`release`, the turn stays admitted). */
export interface TurnClaim {
  admitted: boolean;
  used(saleId: string, units: number): Promise<void>;
  release(): Promise<void>;
}

const NO_CLAIM: TurnClaim = { admitted: false, used: async () => {}, release: async () => {} };

/**
 * Claims an admitted turn for one order: a turn is used once, so a second order with it (another tab, a replay) is
 * refused until this one gives the turn back. A turn already used by the sale `saleId` names passes again (a keyed
 * retry reaches the sale its first request made).
 */
export async function claimTurn(
  room: RoomConfig,
  eventDateId: string,
  token: string | null,
  saleId: string | null,
): Promise<TurnClaim> {
  if (!token) return NO_CLAIM;
  const { keys, args } = head(room, eventDateId);
  const { redis } = room;
  const [verdict] = (await run(redis, 'CLAIM', keys, [...args, token, saleId ?? ''])) as [string, string];
  if (verdict === 'same-sale') return { admitted: true, used: async () => {}, release: async () => {} };
  if (verdict !== 'claimed') return NO_CLAIM;
  return {
    admitted: true,
    async used(usedBySale, units) {
      await run(redis, 'USED', keys, [...args, token, usedBySale, units, PAYING_WINDOW_MS]);
    },
    async release() {
      await run(redis, 'RELEASE', keys, [...args, token]);
    },
  };
}

/** Paying buyers (token → sale id) the ticker checks against the sales table. */
export async function payingTurns(redis: Redis, eventDateId: string): Promise<Map<string, string>> {
  return new Map(Object.entries(await redis.hgetall(roomKeys(eventDateId).paying)));
}

/** Frees the slots of paying buyers whose sale is finished. */
export async function finishTurns(room: RoomConfig, eventDateId: string, tokens: readonly string[]): Promise<void> {
  if (tokens.length === 0) return;
  const { keys, args } = head(room, eventDateId);
  await run(room.redis, 'FINISH', keys, [...args, ...tokens]);
}

export interface RoomKnobs extends Admission {
  /** usedTotal read before the stock was (roomCounters): guards obtainable against a sale made meanwhile. */
  usedTotalSeen: number;
  /** Units buyers could still reserve (on sale plus lapsed holds). */
  obtainable: number;
  soldOut: boolean;
  /** Measured admissions per second (smoothed), for the estimated waits. */
  admissionRate: number;
}

/** Writes what the ticker decided and admits with it at once; answers the room's counts. */
export async function setRoomKnobs(
  room: RoomConfig,
  eventDateId: string,
  knobs: RoomKnobs,
): Promise<{ waiting: number; active: number; paying: number; soldOut: boolean; lastAdmittedSeq: number }> {
  const { keys, args } = head(room, eventDateId);
  const pairs = [
    ['target', knobs.targetActive],
    ['rate', knobs.admitPerSecond],
    ['obtainable', knobs.obtainable],
    ['soldOut', knobs.soldOut ? 1 : 0],
    ['admissionRate', knobs.admissionRate],
  ].flat();
  const [waiting, active, paying, soldOut, lastAdmittedSeq] = (await run(room.redis, 'SET_KNOBS', keys, [
    ...args,
    knobs.usedTotalSeen,
    ...pairs,
  ])) as number[];
  return {
    waiting: waiting ?? 0,
    active: active ?? 0,
    paying: paying ?? 0,
    soldOut: soldOut === 1,
    lastAdmittedSeq: lastAdmittedSeq ?? 0,
  };
}

export async function roomCounters(
  redis: Redis,
  eventDateId: string,
): Promise<{ admittedTotal: number; usedTotal: number; expired: number; target: number; rate: number }> {
  const [admittedTotal, usedTotal, expired, target, rate] = await redis.hmget(
    roomKeys(eventDateId).knobs,
    'admittedTotal',
    'usedTotal',
    'expired',
    'target',
    'rate',
  );
  return {
    admittedTotal: Number(admittedTotal ?? 0),
    usedTotal: Number(usedTotal ?? 0),
    expired: Number(expired ?? 0),
    target: Number(target ?? 0),
    rate: Number(rate ?? 0),
  };
}

/** The room configuration of the API's services. */
export function waitingRoomOf(services: { redis: Redis; env: { WAITING_ROOM_TURN_MS: number } }): RoomConfig {
  return { redis: services.redis, turnWindowMs: services.env.WAITING_ROOM_TURN_MS };
}
