/**
 * Buyer sign-in limits (contract 5.6) must not let a stranger lock a buyer out: the per-email budgets of
 * POST /customer/auth/request and /verify are kept per email and client address together, so spending them from one
 * address leaves the owner's budget at their own address intact. The client address is the socket's (fastify inject
 * `remoteAddress`); X-Forwarded-For is trusted only from loopback (TRUST_PROXY), which these addresses are not.
 */
import { randomUUID } from 'node:crypto';
import { uniqueClientAddress } from '../support/fixtures.js';
import { type InboxMessage, inbox } from '../support/purchase.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

/** Addresses of their own per test: the limits live in Redis, shared by every suite of a run. */
const stranger = uniqueClientAddress;
const owner = uniqueClientAddress;
const sprayer = uniqueClientAddress;
const victimEmail = () => `victim-${randomUUID().slice(0, 8)}@x.test`;

const requestCode = (email: string, remoteAddress: string) =>
  api.request({ method: 'POST', url: '/api/v1/customer/auth/request', payload: { email }, remoteAddress });
const verifyCode = (email: string, code: string, remoteAddress: string) =>
  api.request({ method: 'POST', url: '/api/v1/customer/auth/verify', payload: { email, code }, remoteAddress });

async function signInMails(email: string, atLeast: number): Promise<InboxMessage[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const mails = (await inbox(api.env.SANDBOX_URL, email)).filter((m) => /sign-in code/i.test(m.subject));
    if (mails.length >= atLeast) return mails;
    if (Date.now() > deadline) throw new Error(`only ${mails.length} sign-in mails to ${email}, expected ${atLeast}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
const codeOf = (mail: InboxMessage): string => /(\d{6})/.exec(mail.subject)?.[1] ?? '';

describe('buyer sign-in lockout: per-email limits are keyed on email AND client address (contract 5.6)', () => {
  test('a stranger exhausting POST /customer/auth/request for victim@x from address A does not stop the victim from address B', async () => {
    const email = victimEmail();
    const addressA = stranger();
    for (let i = 0; i < 5; i += 1) expect((await requestCode(email, addressA)).statusCode).toBe(202);
    const blocked = await requestCode(email, addressA);
    expect(blocked.statusCode).toBe(429);
    expect(blocked.json().error).toMatchObject({ code: 'RATE_LIMITED', retryable: expect.any(Boolean) });
    expect(Object.keys(blocked.json().error).sort()).toEqual(['code', 'details', 'message', 'retryable']);

    const strangersMails = await signInMails(email, 5);
    const addressB = owner();
    expect((await requestCode(email, addressB)).statusCode).toBe(202);
    const mails = await signInMails(email, 6);
    const ownMail = mails.find((mail) => !strangersMails.some((seen) => seen.subject === mail.subject));
    expect(ownMail).toBeDefined();
    const verified = await verifyCode(email, codeOf(ownMail as InboxMessage), addressB);
    expect(verified.statusCode).toBe(200);
    expect(verified.json().data.buyer.email).toBe(email);
  });

  test('a stranger exhausting POST /customer/auth/verify for victim@x from address A does not stop the victim from address B', async () => {
    const email = victimEmail();
    const addressA = stranger();
    // No code is live yet, so none of these guesses can succeed; they only spend the verify budget.
    for (let i = 0; i < 10; i += 1) expect((await verifyCode(email, '000000', addressA)).statusCode).toBe(401);
    expect((await verifyCode(email, '000000', addressA)).statusCode).toBe(429);

    const addressB = owner();
    expect((await requestCode(email, addressB)).statusCode).toBe(202);
    const [mail] = await signInMails(email, 1);
    const verified = await verifyCode(email, codeOf(mail as InboxMessage), addressB);
    expect(verified.statusCode).toBe(200);
  });

  test('the per-address budget still holds for the stranger across many emails', async () => {
    const addressA = sprayer();
    const statuses: number[] = [];
    for (let i = 0; i < 31; i += 1) statuses.push((await requestCode(victimEmail(), addressA)).statusCode);
    expect(statuses.slice(0, 30).every((status) => status === 202)).toBe(true);
    expect(statuses[30]).toBe(429);
  });
});

describe('wrong codes never spend the owner’s live code (issue 31)', () => {
  test('strangers guessing from many addresses leave the owner’s code working from the owner’s address', async () => {
    const email = victimEmail();
    const addressB = owner();
    expect((await requestCode(email, addressB)).statusCode).toBe(202);
    const [mail] = await signInMails(email, 1);
    const code = codeOf(mail as InboxMessage);
    const wrong = code === '000000' ? '000001' : '000000';
    // Two strangers spend their whole per-address budget on wrong guesses: far past the code's shared attempts.
    for (const address of [stranger(), stranger()]) {
      for (let i = 0; i < 10; i += 1) expect((await verifyCode(email, wrong, address)).statusCode).toBe(401);
    }
    const verified = await verifyCode(email, code, addressB);
    expect(verified.statusCode).toBe(200);
    expect(verified.json().data.buyer.email).toBe(email);
  });

  test('past the shared attempts a code answers only the address that asked for it, so guessing stays bounded', async () => {
    const email = victimEmail();
    const addressB = owner();
    expect((await requestCode(email, addressB)).statusCode).toBe(202);
    const [mail] = await signInMails(email, 1);
    const code = codeOf(mail as InboxMessage);
    const wrong = code === '000000' ? '000001' : '000000';
    const guesser = stranger();
    for (let i = 0; i < 5; i += 1) expect((await verifyCode(email, wrong, guesser)).statusCode).toBe(401);
    // Even the right code, typed from another address, is refused now; the owner's address still gets in.
    expect((await verifyCode(email, code, stranger())).statusCode).toBe(401);
    expect((await verifyCode(email, code, addressB)).statusCode).toBe(200);
    expect((await verifyCode(email, code, addressB)).statusCode).toBe(401);
  });
});
