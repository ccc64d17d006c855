/** Entry point of `ticketing` (bin/ticketing.mjs loads it through tsx): runs the program on this process's argv. */
import { run } from './program.js';

// `ticketing sales list --json | head` closes the pipe early; that is the reader's choice, not a failure.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

process.exitCode = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  interactive: Boolean(process.stderr.isTTY),
});
