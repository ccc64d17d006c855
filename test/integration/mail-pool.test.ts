/**
 * The mail client keeps its SMTP connections: a run of ticket emails goes over one connection instead of one each,
 * and a connection the server dropped is replaced on the next message rather than failing it.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { MailClient } from '../../integrations/mail/client.js';

/** An SMTP server that accepts everything and counts the connections it was opened. */
async function countingServer(port = 0) {
  const received: string[] = [];
  let connections = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    // Closing drops open connections at once, as a relay that restarts does.
    closeTimeout: 50,
    onConnect(_session, callback) {
      connections += 1;
      callback();
    },
    onData(stream, session, callback) {
      stream.resume();
      stream.once('end', () => {
        received.push(...session.envelope.rcptTo.map((recipient) => recipient.address));
        callback();
      });
    },
  });
  server.listen(port, '127.0.0.1');
  await once(server.server, 'listening');
  return {
    port: (server.server.address() as AddressInfo).port,
    received,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const message = (to: string) => ({ to, subject: 'Your tickets', text: 'Attached.', html: '<p>Attached.</p>' });

test('a run of messages shares one connection, and one the server dropped is replaced on the next message', async () => {
  const first = await countingServer();
  const mail = new MailClient({
    host: '127.0.0.1',
    port: first.port,
    from: 'Tickets <t@ticketing.local>',
    ignoreTls: true,
  });
  try {
    for (let i = 0; i < 6; i += 1) await mail.sendMail(message(`buyer-${i}@example.test`));
    expect(first.received).toHaveLength(6);
    expect(first.connections()).toBe(1);

    // The relay restarts: its connections are gone, and the next message opens a new one instead of failing.
    await first.close();
    const restarted = await countingServer(first.port);
    try {
      const sent = await mail.sendMail(message('after-restart@example.test'));
      expect(sent.accepted).toEqual(['after-restart@example.test']);
      expect(restarted.connections()).toBe(1);
    } finally {
      await restarted.close();
    }
  } finally {
    mail.close();
  }
});
