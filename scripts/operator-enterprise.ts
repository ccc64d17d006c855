/**
 * Operator commands for enterprise SSO integrations (issue 16; the contract names no API to manage them). An
 * enterprise signs one-time tokens for its users with the secret printed here once; POST
 * /api/customer-auth/enterprise-exchange turns a token into a buyer session for the workspaces it serves.
 *
 *   npm run operator -- enterprise create --name "Acme" --workspaces <id>[,<id>…] [--return-hosts shop.acme.com,*.acme.com]
 *   npm run operator -- enterprise list
 *   npm run operator -- enterprise show <id>
 *   npm run operator -- enterprise update <id> [--name <text>] [--workspaces <id>,…] [--return-hosts <pattern>,…]
 *   npm run operator -- enterprise rotate-secret <id>
 *   npm run operator -- enterprise disable <id>      (refuses its tokens and ends its buyers' sessions)
 *   npm run operator -- enterprise enable <id>
 *
 * Lists given to update replace the current ones. Exit codes: 0 done, 1 refused or failed, 2 usage error.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { type Env, loadEnv } from '../config/env.js';
import {
  ENTERPRISE_TOKEN_ALGORITHM,
  ENTERPRISE_TOKEN_MAX_LIFETIME_SECONDS,
  enterpriseTokenAudience,
} from '../domain/enterprise.js';
import {
  createEnterprise,
  Enterprise,
  type EnterpriseSettings,
  type IEnterprise,
  rotateEnterpriseSecret,
  servedWorkspaceIds,
  setEnterpriseDisabled,
  updateEnterprise,
} from '../entities/enterprise.js';
import { isUuid } from '../entities/ids.js';
import { initOrm } from '../entities/orm.js';

export interface EnterpriseOperatorDeps {
  orm: MikroORM;
  env: Pick<Env, 'SECRETS_ENCRYPTION_KEY' | 'PUBLIC_ORIGIN'>;
  print(line: string): void;
}

export const ENTERPRISE_USAGE = `usage: npm run operator -- enterprise <command> …
  create --name <text> --workspaces <id>[,<id>…] [--return-hosts <host|*.domain>[,…]]
  list
  show <id>
  update <id> [--name <text>] [--workspaces <id>,…] [--return-hosts <host|*.domain>,…]
  rotate-secret <id>
  disable <id>
  enable <id>`;

class UsageError extends Error {}

const OPTIONS = new Set(['name', 'workspaces', 'return-hosts']);

function parseArgs(args: string[]): { positional: string[]; options: Map<string, string> } {
  const positional: string[] = [];
  const options = new Map<string, string>();
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i] as string;
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq > 2 ? arg.slice(2, eq) : arg.slice(2);
    if (!OPTIONS.has(name)) throw new UsageError(`unknown option --${name}`);
    const value = eq > 2 ? arg.slice(eq + 1) : args[++i];
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    options.set(name, value);
  }
  return { positional, options };
}

const list = (text: string | undefined): string[] | undefined =>
  text === undefined
    ? undefined
    : text
        .split(',')
        .map((part) => part.trim())
        .filter(Boolean);

function settingsFrom(options: Map<string, string>): Partial<EnterpriseSettings> {
  const workspaceIds = list(options.get('workspaces'));
  const invalid = workspaceIds?.filter((id) => !isUuid(id)) ?? [];
  if (invalid.length > 0) throw new UsageError(`--workspaces takes workspace ids: ${invalid.join(', ')}`);
  const name = options.get('name');
  const returnUrlHosts = list(options.get('return-hosts'));
  return {
    ...(name !== undefined ? { name } : {}),
    ...(workspaceIds ? { workspaceIds } : {}),
    ...(returnUrlHosts ? { returnUrlHosts } : {}),
  };
}

function enterpriseIdFrom(positional: string[]): string {
  const id = positional[0];
  if (!id || !isUuid(id)) throw new UsageError('name the enterprise by its id');
  return id.toLowerCase();
}

async function describe(deps: EnterpriseOperatorDeps, enterprise: IEnterprise): Promise<string[]> {
  const workspaces = await servedWorkspaceIds(deps.orm.em.fork(), enterprise.id);
  return [
    `${enterprise.id}  ${enterprise.name}${enterprise.disabledAt ? `  (disabled ${enterprise.disabledAt.toISOString()})` : ''}`,
    `  workspaces served: ${workspaces.join(', ') || '(none)'}`,
    `  returnUrl hosts:   ${enterprise.returnUrlHosts.join(', ') || '(none: return links are ignored)'}`,
  ];
}

/** How the enterprise must sign its tokens, printed with every new secret. */
const tokenInstructions = (deps: EnterpriseOperatorDeps, enterpriseId: string): string[] => [
  `Tokens: JWT ${ENTERPRISE_TOKEN_ALGORITHM}, key = the secret's UTF-8 bytes; claims iss="${enterpriseId}",`,
  `  aud="${enterpriseTokenAudience(deps.env.PUBLIC_ORIGIN)}", sub, email, name (optional), iat, jti (unique),`,
  `  exp at most ${ENTERPRISE_TOKEN_MAX_LIFETIME_SECONDS} s after iat. Exchange: POST /api/customer-auth/enterprise-exchange { "token": "…" }`,
];

/** Runs one enterprise command; returns the exit code. Tests call it in-process with their own ORM. */
export async function runEnterpriseOperator(argv: string[], deps: EnterpriseOperatorDeps): Promise<number> {
  const { print } = deps;
  const em = () => deps.orm.em.fork();
  try {
    const [command, ...rest] = argv;
    if (!command) throw new UsageError('name a command');
    const { positional, options } = parseArgs(rest);
    switch (command) {
      case 'create': {
        const settings = settingsFrom(options);
        if (!settings.name) throw new UsageError('create needs --name');
        if (!settings.workspaceIds?.length) throw new UsageError('create needs --workspaces <id>[,<id>…]');
        const { enterprise, secret } = await createEnterprise(
          em(),
          { name: settings.name, workspaceIds: settings.workspaceIds, returnUrlHosts: settings.returnUrlHosts ?? [] },
          deps.env.SECRETS_ENCRYPTION_KEY,
        );
        for (const line of await describe(deps, enterprise)) print(line);
        print(`Signing secret (shown once; store it in the enterprise's secret manager): ${secret}`);
        for (const line of tokenInstructions(deps, enterprise.id)) print(line);
        return 0;
      }
      case 'list': {
        const enterprises = await em().find(Enterprise, {}, { orderBy: { createdAt: 'asc' } });
        for (const enterprise of enterprises) for (const line of await describe(deps, enterprise)) print(line);
        if (enterprises.length === 0) print('no enterprises');
        return 0;
      }
      case 'show': {
        const enterprise = await em().findOne(Enterprise, { id: enterpriseIdFrom(positional) });
        if (!enterprise) throw new Error(`no enterprise ${positional[0]}`);
        for (const line of await describe(deps, enterprise)) print(line);
        for (const line of tokenInstructions(deps, enterprise.id)) print(line);
        return 0;
      }
      case 'update': {
        const id = enterpriseIdFrom(positional);
        const settings = settingsFrom(options);
        if (Object.keys(settings).length === 0)
          throw new UsageError('update needs --name, --workspaces or --return-hosts');
        if (settings.workspaceIds?.length === 0) throw new UsageError('--workspaces cannot be empty; disable instead');
        const enterprise = await updateEnterprise(em(), id, settings);
        for (const line of await describe(deps, enterprise)) print(line);
        return 0;
      }
      case 'rotate-secret': {
        const id = enterpriseIdFrom(positional);
        const secret = await rotateEnterpriseSecret(em(), id, deps.env.SECRETS_ENCRYPTION_KEY);
        print(`New signing secret (shown once; tokens signed with the old one are refused from now on): ${secret}`);
        for (const line of tokenInstructions(deps, id)) print(line);
        return 0;
      }
      case 'disable':
      case 'enable': {
        const id = enterpriseIdFrom(positional);
        await setEnterpriseDisabled(em(), id, command === 'disable');
        print(command === 'disable' ? `${id} disabled; its buyers' sessions were ended` : `${id} enabled`);
        return 0;
      }
      default:
        throw new UsageError(`unknown command enterprise ${command}`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      print(`${error.message}\n${ENTERPRISE_USAGE}`);
      return 2;
    }
    print(`failed: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

/** `npm run operator -- enterprise …` from scripts/operator.ts: needs Postgres only, not Temporal. */
export async function enterpriseOperatorMain(argv: string[]): Promise<number> {
  const env = loadEnv();
  const orm = await initOrm({ databaseUrl: env.DATABASE_URL, poolMax: 2 });
  try {
    return await runEnterpriseOperator(argv, { orm, env, print: (text) => console.log(text) });
  } finally {
    await orm.close(true);
  }
}
