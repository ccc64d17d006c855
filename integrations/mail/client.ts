import nodemailer, { type Transporter } from 'nodemailer';
import type SMTPPool from 'nodemailer/lib/smtp-pool/index.js';
import { ProviderError } from '../errors.js';
import { errorProperty, field } from '../http.js';

/**
 * Outgoing mail over SMTP (nodemailer). Points at the sandbox inbox locally and at the real relay in
 * production; only host, port, credentials and the From address change.
 *
 * Connections are pooled: a flash sale sends a ticket email per purchase, and a connection per message would repeat
 * the TCP handshake, greeting, EHLO and QUIT every time (relays also limit how often a sender connects). A pooled
 * connection carries up to MAX_MESSAGES_PER_CONNECTION messages and closes after `timeoutMs` idle; one the server
 * dropped is replaced on the next message.
 *
 * Failures become ProviderError with `status` = the SMTP reply code when the server answered (null when it
 * could not be reached); 4xx replies and connection problems are retryable, 5xx replies are not.
 */

export interface MailAttachment {
  filename: string;
  content: Buffer | string;
  contentType: string;
  /** Content-ID for inline images referenced as `cid:…` in the HTML. */
  cid?: string;
}

export interface MailMessage {
  to: string | string[];
  subject: string;
  text: string;
  html: string;
  attachments?: MailAttachment[];
  /** Overrides the client's default From. */
  from?: string;
  replyTo?: string;
  /** Extra headers, e.g. an idempotency marker such as `X-Ticketing-Message-Key`. */
  headers?: Record<string, string>;
}

export interface MailSendResult {
  messageId: string;
  accepted: string[];
  rejected: string[];
}

export interface MailClientOptions {
  host: string;
  port: number;
  /** Default From address, e.g. `Tickets <tickets@ticketing.local>`. */
  from: string;
  /** Implicit TLS (port 465). STARTTLS is used when the server offers it unless `ignoreTls`. */
  secure?: boolean;
  ignoreTls?: boolean;
  /** Refuse to send unless the server upgrades the connection with STARTTLS (no silent fallback to clear text). */
  requireTls?: boolean;
  /** PEM of a private CA the server's certificate is checked against (a relay on a private network). */
  tlsCa?: string;
  auth?: { user: string; pass: string };
  timeoutMs?: number;
}

const MAX_CONNECTIONS = 5;
const MAX_MESSAGES_PER_CONNECTION = 100;

const RETRYABLE_TRANSPORT_CODES = new Set([
  'ECONNECTION',
  'ETIMEDOUT',
  'ESOCKET',
  'EDNS',
  'ECONNREFUSED',
  'ECONNRESET',
]);

function addressList(list: ReadonlyArray<string | { address: string }> | undefined): string[] {
  return (list ?? []).map((entry) => (typeof entry === 'string' ? entry : entry.address));
}

export class MailClient {
  readonly #transport: Transporter<SMTPPool.SentMessageInfo>;
  readonly #from: string;

  constructor(options: MailClientOptions) {
    const timeoutMs = options.timeoutMs ?? 15_000;
    this.#from = options.from;
    this.#transport = nodemailer.createTransport({
      pool: true,
      maxConnections: MAX_CONNECTIONS,
      maxMessages: MAX_MESSAGES_PER_CONNECTION,
      host: options.host,
      port: options.port,
      secure: options.secure ?? false,
      ignoreTLS: options.ignoreTls ?? false,
      requireTLS: options.requireTls ?? false,
      ...(options.tlsCa ? { tls: { ca: options.tlsCa } } : {}),
      ...(options.auth ? { auth: options.auth } : {}),
      connectionTimeout: timeoutMs,
      greetingTimeout: timeoutMs,
      socketTimeout: timeoutMs,
    });
  }

  async sendMail(message: MailMessage): Promise<MailSendResult> {
    try {
      const info = await this.#transport.sendMail({
        from: message.from ?? this.#from,
        to: message.to,
        subject: message.subject,
        text: message.text,
        html: message.html,
        ...(message.replyTo ? { replyTo: message.replyTo } : {}),
        ...(message.headers ? { headers: message.headers } : {}),
        attachments: (message.attachments ?? []).map((attachment) => ({
          filename: attachment.filename,
          content: attachment.content,
          contentType: attachment.contentType,
          ...(attachment.cid ? { cid: attachment.cid } : {}),
        })),
      });
      return {
        messageId: info.messageId,
        accepted: addressList(info.accepted),
        rejected: addressList(info.rejected),
      };
    } catch (error) {
      throw toProviderError(error);
    }
  }

  /** Same as `sendMail`; matches the worker's mail port. */
  async send(message: MailMessage): Promise<void> {
    await this.sendMail(message);
  }

  /** Checks the server answers and accepts this client (connection + optional auth). */
  async verify(): Promise<void> {
    try {
      await this.#transport.verify();
    } catch (error) {
      throw toProviderError(error);
    }
  }

  close(): void {
    this.#transport.close();
  }
}

function toProviderError(error: unknown): ProviderError {
  const code = errorProperty(error, 'code');
  const responseCode = field(error, 'responseCode');
  const status = typeof responseCode === 'number' ? responseCode : null;
  // A server reply: 4xx is temporary, 5xx permanent. No reply: connection trouble is worth retrying, anything
  // else (a malformed message, bad credentials without a reply code) is not.
  const retryable =
    status !== null ? status >= 400 && status < 500 : code === undefined || RETRYABLE_TRANSPORT_CODES.has(code);
  return new ProviderError({
    provider: 'mail',
    status,
    retryable,
    code: code ?? null,
    message: `mail: ${errorProperty(error, 'message') ?? String(error)}`,
    cause: error,
  });
}
