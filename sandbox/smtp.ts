import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import type { Faults } from './faults.js';

/**
 * SMTP inbox: a plain SMTP server (no TLS, any or no credentials) that parses and keeps every message it accepts.
 * Messages are listed per recipient through the control API (`GET /control/mail?to=`). Envelope recipients count,
 * so Bcc copies are listed too. Fault `down` answers 421 to every recipient; `slow` delays accepting the data.
 */

export interface InboxMessage {
  id: number;
  from: string | null;
  /** Envelope recipients (lower-cased). */
  to: string[];
  subject: string;
  text: string;
  html: string;
  messageId: string | null;
  headers: Record<string, string>;
  attachments: Array<{ filename: string | null; contentType: string; size: number; contentId: string | null }>;
  receivedAt: string;
}

const MAX_MESSAGES = 5000;

export class MailInbox {
  readonly #messages: InboxMessage[] = [];
  #nextId = 1;

  add(message: Omit<InboxMessage, 'id'>): InboxMessage {
    const stored = { id: this.#nextId++, ...message };
    this.#messages.push(stored);
    if (this.#messages.length > MAX_MESSAGES) this.#messages.shift();
    return stored;
  }

  /** Newest first; all messages when `to` is omitted. */
  list(to?: string): InboxMessage[] {
    const wanted = to?.trim().toLowerCase();
    return this.#messages.filter((m) => !wanted || m.to.includes(wanted)).reverse();
  }

  reset(): void {
    this.#messages.length = 0;
  }
}

export interface SmtpHandle {
  port: number;
  close(): Promise<void>;
}

export async function startSmtp(options: {
  port: number;
  host: string;
  inbox: MailInbox;
  faults: Faults;
  log: FastifyBaseLogger;
}): Promise<SmtpHandle> {
  const { inbox, faults, log } = options;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    hideSTARTTLS: true,
    banner: 'ticketing sandbox inbox',
    size: 25 * 1024 * 1024,
    closeTimeout: 1000,
    logger: false,
    onAuth(_auth, _session, callback) {
      callback(null, { user: 'sandbox' });
    },
    onRcptTo(_address, _session, callback) {
      if (faults.get('smtp').mode === 'down') {
        const error: Error & { responseCode?: number } = new Error('Service not available, try again later');
        error.responseCode = 421;
        callback(error);
        return;
      }
      callback();
    },
    onData(stream, session, callback) {
      void (async () => {
        try {
          const parsed = await simpleParser(stream);
          await faults.delay('smtp');
          const headers: Record<string, string> = {};
          for (const line of parsed.headerLines) headers[line.key] = line.line.slice(line.line.indexOf(':') + 1).trim();
          const stored = inbox.add({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : null,
            to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
            subject: parsed.subject ?? '',
            text: parsed.text ?? '',
            html: typeof parsed.html === 'string' ? parsed.html : '',
            messageId: parsed.messageId ?? null,
            headers,
            attachments: parsed.attachments.map((a) => ({
              filename: a.filename ?? null,
              contentType: a.contentType,
              size: a.size,
              contentId: a.cid ?? null,
            })),
            receivedAt: new Date().toISOString(),
          });
          log.info({ messageId: stored.id, recipients: stored.to.length }, 'mail received');
          callback();
        } catch (error) {
          callback(error instanceof Error ? error : new Error(String(error)));
        }
      })();
    },
  });
  server.on('error', (error) => log.warn({ err: error }, 'smtp error'));

  await new Promise<void>((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.server.once('error', onError);
    server.listen(options.port, options.host, () => {
      server.server.off('error', onError);
      resolve();
    });
  });
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    close: () =>
      Promise.race([
        new Promise<void>((resolve) => server.close(() => resolve())),
        sleep(2000, undefined, { ref: false }).then(() => undefined),
      ]),
  };
}
