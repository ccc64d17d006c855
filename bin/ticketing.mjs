#!/usr/bin/env node
// Launcher of the `ticketing` command-line client: the client is TypeScript (cli/main.ts), run through tsx in this
// same process, as the repo's other scripts run (`tsx scripts/*.ts`), so there is no build step and no child process.
import { register } from 'tsx/esm/api';

register();
await import('../cli/main.ts');
