import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MailClient } from '../../integrations/mail/client.js';
import type { SandboxHandle } from '../../sandbox/server.js';
import { at, control, rejectionOf, startTestSandbox } from './sandbox-support.js';

interface ListedMail {
  to: string[];
  subject: string;
  text: string;
  html: string;
  attachments: Array<{ filename: string; contentType: string; size: number }>;
  receivedAt: string;
}

let sandbox: SandboxHandle;
let mail: MailClient;

beforeAll(async () => {
  sandbox = await startTestSandbox();
  mail = new MailClient({
    host: '127.0.0.1',
    port: sandbox.smtpPort,
    from: 'Tickets <tickets@ticketing.local>',
    ignoreTls: true,
    timeoutMs: 3000,
  });
});

afterAll(async () => {
  mail?.close();
  await sandbox?.close();
});

async function inbox(to: string): Promise<ListedMail[]> {
  const response = await control<{ data: ListedMail[] }>(sandbox, 'GET', `/mail?to=${encodeURIComponent(to)}`);
  expect(response.status).toBe(200);
  return response.body.data;
}

describe('SMTP inbox', () => {
  it('delivers a message with its attachment over SMTP and lists it for the recipient', async () => {
    const pdf = Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(2048, 7)]);
    const sent = await mail.sendMail({
      to: 'ana@example.com',
      subject: 'Your tickets FT-ABC123',
      text: 'Hello Ana, your tickets are attached.',
      html: '<p>Hello Ana, your tickets are attached.</p>',
      attachments: [{ filename: 'tickets.pdf', content: pdf, contentType: 'application/pdf' }],
    });
    expect(sent.accepted).toEqual(['ana@example.com']);
    expect(sent.rejected).toEqual([]);

    const [message] = await inbox('ana@example.com');
    expect(message).toMatchObject({
      to: ['ana@example.com'],
      subject: 'Your tickets FT-ABC123',
      text: 'Hello Ana, your tickets are attached.',
      html: '<p>Hello Ana, your tickets are attached.</p>',
      attachments: [{ filename: 'tickets.pdf', contentType: 'application/pdf', size: pdf.length }],
    });
    expect(Date.now() - Date.parse(message?.receivedAt ?? '')).toBeLessThan(10_000);
  });

  it('lists a recipient’s messages newest first, matching the address without regard to case', async () => {
    await mail.sendMail({ to: 'Bea@Example.com', subject: 'first', text: '1', html: '<p>1</p>' });
    await mail.sendMail({ to: 'bea@example.com', subject: 'second', text: '2', html: '<p>2</p>' });
    await mail.sendMail({ to: 'carl@example.com', subject: 'not for Bea', text: '3', html: '<p>3</p>' });
    expect((await inbox('BEA@example.com')).map((m) => m.subject)).toEqual(['second', 'first']);
  });

  it('reports a retryable failure while the SMTP server is down, and delivers once it is back', async () => {
    await control(sandbox, 'POST', '/faults', { target: 'smtp', mode: 'down' });
    try {
      const error = await rejectionOf(mail.sendMail({ to: 'dora@example.com', subject: 'x', text: 'x', html: 'x' }));
      expect(error).toMatchObject({ provider: 'mail', status: 421, retryable: true });
      expect(await inbox('dora@example.com')).toEqual([]);
    } finally {
      await control(sandbox, 'POST', '/faults', { target: 'smtp', mode: 'ok' });
    }
    await mail.sendMail({ to: 'dora@example.com', subject: 'retried', text: 'x', html: 'x' });
    expect((await inbox('dora@example.com')).map((m) => m.subject)).toEqual(['retried']);
  });

  it('clears the inbox on reset', async () => {
    await mail.sendMail({ to: 'eve@example.com', subject: 'x', text: 'x', html: 'x' });
    const reset = await control(sandbox, 'POST', '/reset', { targets: ['smtp'] });
    expect(at(reset.body, 'data', 'reset')).toEqual(['smtp']);
    expect(await inbox('eve@example.com')).toEqual([]);
  });
});
