/**
 * Mail to a real relay: SMTP_TLS=starttls upgrades the connection and logs in over it, and refuses to send (instead of
 * falling back to clear text) when the server does not offer STARTTLS. The relay is smtp-server with a certificate of
 * a CA made for the test, which the client trusts through SMTP_TLS_CA_CERT_FILE.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SMTPServer } from 'smtp-server';
import { loadEnv } from '../../config/env.js';
import { MailClient } from '../../integrations/mail/client.js';
import { mailClientOptions } from '../../worker/providers.js';

interface Received {
  secure: boolean;
  user: string | undefined;
  to: string[];
}

let work: string;
let certificate: { key: string; cert: string; file: string };

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'smtp-tls-'));
  const key = join(work, 'relay.key');
  const cert = join(work, 'relay.pem');
  execFileSync('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    key,
    '-out',
    cert,
    '-days',
    '1',
    '-subj',
    '/CN=localhost',
    '-addext',
    'subjectAltName=DNS:localhost,IP:127.0.0.1',
  ]);
  certificate = { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8'), file: cert };
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

async function startRelay(options: { offerStartTls: boolean }) {
  const received: Received[] = [];
  const server = new SMTPServer({
    key: certificate.key,
    cert: certificate.cert,
    // Hiding it is not enough: a client that requires TLS tries the command anyway, so it is refused outright.
    ...(options.offerStartTls ? {} : { hideSTARTTLS: true, disabledCommands: ['STARTTLS'] }),
    authOptional: false,
    authMethods: ['PLAIN', 'LOGIN'],
    onAuth(auth, _session, callback) {
      if (auth.username === 'tickets' && auth.password === 'relay-password') callback(null, { user: auth.username });
      else callback(new Error('invalid login'));
    },
    onData(stream, session, callback) {
      stream.resume();
      stream.on('end', () => {
        received.push({
          secure: session.secure,
          user: typeof session.user === 'string' ? session.user : undefined,
          to: session.envelope.rcptTo.map((each) => each.address),
        });
        callback();
      });
    },
    logger: false,
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return { received, port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const mailer = (port: number) =>
  new MailClient({
    ...mailClientOptions(
      loadEnv({
        NODE_ENV: 'development',
        SMTP_HOST: '127.0.0.1',
        SMTP_PORT: String(port),
        SMTP_TLS: 'starttls',
        SMTP_USER: 'tickets',
        SMTP_PASSWORD_FILE: join(work, 'password'),
        SMTP_TLS_CA_CERT_FILE: certificate.file,
      }),
    ),
    timeoutMs: 5_000,
  });

const message = {
  to: 'buyer@example.com',
  subject: 'Your tickets',
  text: 'See you there',
  html: '<p>See you there</p>',
};

describe('SMTP with STARTTLS and a login', () => {
  beforeAll(() => {
    execFileSync('sh', ['-c', `printf 'relay-password\\n' > ${join(work, 'password')}`]);
  });

  test('the connection is upgraded before the login, and the message is delivered', async () => {
    const relay = await startRelay({ offerStartTls: true });
    const mail = mailer(relay.port);
    try {
      await mail.sendMail(message);
      expect(relay.received).toEqual([{ secure: true, user: 'tickets', to: ['buyer@example.com'] }]);
    } finally {
      mail.close();
      await relay.close();
    }
  });

  test('a relay that offers no STARTTLS gets nothing: no login, no message, in clear text', async () => {
    const relay = await startRelay({ offerStartTls: false });
    const mail = mailer(relay.port);
    try {
      await expect(mail.sendMail(message)).rejects.toThrow();
      expect(relay.received).toEqual([]);
    } finally {
      mail.close();
      await relay.close();
    }
  });
});
