/**
 * What a person's browser does on the device verification page (GET /device): sign in with a code emailed to them
 * (read from the sandbox inbox), enter the user code a device client showed, then approve or deny it. Cookies and the
 * CSRF token of each form are carried the way a browser carries them, through `api.request` (the same app a CLI
 * under test talks to).
 */
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { type InboxMessage, inbox } from './purchase.js';
import type { TestApi } from './stack.js';

let browsers = 0;

/**
 * A client address of its own for each browser (198.19.0.0/16, half of the benchmarking range; buyers use 198.18),
 * so the per-address sign-in limits of one suite never spend another's.
 */
function nextBrowserAddress(): string {
  browsers += 1;
  const n = (process.pid * 7919 + browsers) % (256 * 254);
  return `198.19.${Math.floor(n / 254)}.${1 + (n % 254)}`;
}

const decodeEntities = (text: string): string =>
  text
    .replaceAll('&quot;', '"')
    .replaceAll('&#39;', "'")
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&amp;', '&');

/** The value of the named form field in a page (hidden inputs and prefilled text inputs), or undefined. */
export function formField(html: string, name: string): string | undefined {
  for (const tag of html.match(/<input\b[^>]*>/g) ?? []) {
    if (!new RegExp(`\\bname="${name}"`).test(tag)) continue;
    const value = /\bvalue="([^"]*)"/.exec(tag)?.[1];
    return value === undefined ? '' : decodeEntities(value);
  }
  return undefined;
}

/** The text inside the element with this id (`<dd id="client-id">…</dd>`), tags removed. */
export function elementText(html: string, id: string): string | undefined {
  const match = new RegExp(`<(\\w+)\\b[^>]*\\bid="${id}"[^>]*>([\\s\\S]*?)</\\1>`).exec(html);
  return match?.[2] === undefined ? undefined : decodeEntities(match[2].replace(/<[^>]+>/g, '')).trim();
}

/** The value of `data-<name>` on the element with this id. */
export function elementData(html: string, id: string, name: string): string | undefined {
  const tag = new RegExp(`<\\w+\\b[^>]*\\bid="${id}"[^>]*>`).exec(html)?.[0];
  const value = tag ? new RegExp(`\\bdata-${name}="([^"]*)"`).exec(tag)?.[1] : undefined;
  return value === undefined ? undefined : decodeEntities(value);
}

/** A cookie jar and a client address: one person's browser on the API origin. */
export class DeviceBrowser {
  readonly remoteAddress = nextBrowserAddress();
  readonly cookies = new Map<string, string>();

  constructor(private readonly api: TestApi) {}

  async get(url: string): Promise<LightMyRequestResponse> {
    return this.send({ method: 'GET', url });
  }

  /** Submits a form as `application/x-www-form-urlencoded`, as a browser does. */
  async postForm(url: string, fields: Record<string, string>): Promise<LightMyRequestResponse> {
    return this.send({
      method: 'POST',
      url,
      payload: new URLSearchParams(fields).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
  }

  private async send(options: InjectOptions): Promise<LightMyRequestResponse> {
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    const response = await this.api.request({
      ...options,
      remoteAddress: this.remoteAddress,
      headers: { ...(options.headers ?? {}), ...(cookie ? { cookie } : {}) },
    });
    for (const set of response.cookies as Array<{ name: string; value: string; expires?: Date; maxAge?: number }>) {
      const cleared = set.value === '' || set.maxAge === 0 || (set.expires && set.expires.getTime() <= Date.now());
      if (cleared) this.cookies.delete(set.name);
      else this.cookies.set(set.name, set.value);
    }
    return response;
  }
}

const messageKey = (message: InboxMessage): string => `${message.receivedAt}\n${message.subject}`;

/** Waits for an organizer sign-in code mailed to `email` after `seen` was taken, and returns the code. */
async function nextSignInCode(api: TestApi, email: string, seen: Set<string>, timeoutMs = 20_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    for (const message of await inbox(api.env.SANDBOX_URL, email)) {
      const code = /organizer sign-in code: (\d{6})/i.exec(message.subject)?.[1];
      if (code && !seen.has(messageKey(message))) return code;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`no organizer sign-in code reached ${email} within ${timeoutMs} ms`);
}

function expectStatus(response: LightMyRequestResponse, status: number, step: string): void {
  if (response.statusCode !== status) {
    throw new Error(`${step} → ${response.statusCode}, expected ${status}: ${response.body.slice(0, 400)}`);
  }
}

/**
 * Signs `email` in on the device page (email → emailed code), as a fresh browser does, and returns that browser.
 * `userCode` is carried through sign-in the way the page carries it, so the next page is the confirmation.
 */
export async function signInOnDevicePage(
  api: TestApi,
  input: { email: string; userCode?: string },
): Promise<{ browser: DeviceBrowser; page: string }> {
  const browser = new DeviceBrowser(api);
  const query = input.userCode ? `?user_code=${encodeURIComponent(input.userCode)}` : '';
  const start = await browser.get(`/device${query}`);
  expectStatus(start, 200, 'GET /device');
  const seen = new Set((await inbox(api.env.SANDBOX_URL, input.email)).map(messageKey));
  const asked = await browser.postForm('/device/sign-in', {
    email: input.email,
    user_code: formField(start.body, 'user_code') ?? '',
    csrf: formField(start.body, 'csrf') ?? '',
  });
  expectStatus(asked, 200, 'POST /device/sign-in');
  const code = await nextSignInCode(api, input.email, seen);
  const signedIn = await browser.postForm('/device/sign-in/code', {
    email: formField(asked.body, 'email') ?? input.email,
    code,
    user_code: formField(asked.body, 'user_code') ?? '',
    csrf: formField(asked.body, 'csrf') ?? '',
  });
  expectStatus(signedIn, 303, 'POST /device/sign-in/code');
  const next = await browser.get(String(signedIn.headers.location));
  expectStatus(next, 200, `GET ${String(signedIn.headers.location)}`);
  return { browser, page: next.body };
}

export interface DeviceDecision {
  /** The confirmation screen the person saw (client, scope, workspace). */
  confirmationPage: string;
  /** The page after the decision. */
  resultPage: string;
}

/**
 * Does what a person does on /device for a device client showing `userCode`: signs in as `email` (a user who exists,
 * e.g. from createOrganizer or a verified sign-up), enters the code, and approves or denies. A user without a
 * workspace is first asked to create one: pass `firstWorkspaceName` for that. `workspaceId` picks the workspace the
 * key acts in when the user has several (default: the one the page preselects, the user's default workspace).
 */
export async function approveDevice(
  api: TestApi,
  input: {
    email: string;
    userCode: string;
    decision: 'approve' | 'deny';
    firstWorkspaceName?: string;
    workspaceId?: string;
  },
): Promise<DeviceDecision> {
  const signedIn = await signInOnDevicePage(api, { email: input.email, userCode: input.userCode });
  const { browser } = signedIn;
  let page = signedIn.page;
  if (page.includes('id="first-workspace"')) {
    if (!input.firstWorkspaceName) throw new Error(`${input.email} has no workspace yet; pass firstWorkspaceName`);
    const created = await browser.postForm('/device/workspace', {
      name: input.firstWorkspaceName,
      user_code: formField(page, 'user_code') ?? input.userCode,
      csrf: formField(page, 'csrf') ?? '',
    });
    expectStatus(created, 303, 'POST /device/workspace');
    const next = await browser.get(String(created.headers.location));
    expectStatus(next, 200, `GET ${String(created.headers.location)}`);
    page = next.body;
  }
  if (!page.includes('id="confirm"')) {
    throw new Error(`the device page did not show the confirmation for ${input.userCode}: ${page.slice(0, 600)}`);
  }
  const workspaceId = input.workspaceId ?? elementData(page, 'workspace-choice', 'selected');
  const decided = await browser.postForm('/device/decision', {
    authorization_id: formField(page, 'authorization_id') ?? '',
    workspace_id: workspaceId ?? '',
    decision: input.decision,
    csrf: formField(page, 'csrf') ?? '',
  });
  expectStatus(decided, 200, 'POST /device/decision');
  return { confirmationPage: page, resultPage: decided.body };
}
