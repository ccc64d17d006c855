/**
 * Payout accounts: where a workspace's settlements are paid. A settlement is approved with allocations over the
 * workspace's active accounts (their default shares, whole percent, summing to 100), so a workspace without accounts
 * cannot be paid out. Operators add them (`npm run operator -- payout-accounts add`); these are the rules.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { isUuid, newId } from '../../entities/ids.js';

export interface PayoutAccountView {
  id: string;
  workspaceId: string;
  holderName: string;
  bankName: string;
  accountLast4: string;
  defaultPercentage: number;
  active: boolean;
}

/** C0/C1 controls, DEL, zero-width and bidirectional controls: invisible in a bank order, or reorder what is seen. */
const UNSAFE_RANGES: ReadonlyArray<readonly [number, number]> = [
  [0x00, 0x1f],
  [0x7f, 0x9f],
  [0x200b, 0x200f],
  [0x202a, 0x202e],
  [0x2060, 0x2064],
  [0x2066, 0x2069],
  [0xfeff, 0xfeff],
];
const hasUnsafeText = (value: string): boolean =>
  [...value].some((char) => {
    const code = char.codePointAt(0) ?? 0;
    return UNSAFE_RANGES.some(([from, to]) => code >= from && code <= to);
  });

const name = (max: number) =>
  z
    .string()
    .trim()
    .min(2)
    .max(max)
    .refine((value) => !hasUnsafeText(value), 'must not contain control, invisible or bidirectional characters');

export const NewPayoutAccount = z.object({
  workspaceId: z.string().refine(isUuid, 'must be a workspace id'),
  holderName: name(160),
  bankName: name(120),
  /** Only the last four digits are kept; the full number stays with the payment processor. */
  accountLast4: z.string().regex(/^\d{4}$/, 'must be the last 4 digits of the account number'),
  defaultPercentage: z.number().int().min(1).max(100),
});
export type NewPayoutAccount = z.infer<typeof NewPayoutAccount>;

export type AddPayoutAccountResult =
  | { ok: true; account: PayoutAccountView; totalPercentage: number }
  | { ok: false; reason: 'workspace_not_found' | 'percentages_exceed_100'; message: string };

interface Row {
  id: string;
  workspace_id: string;
  holder_name: string;
  bank_name: string;
  account_last4: string;
  default_percentage: number;
  active: boolean;
}

const viewOf = (row: Row): PayoutAccountView => ({
  id: row.id,
  workspaceId: row.workspace_id,
  holderName: row.holder_name,
  bankName: row.bank_name,
  accountLast4: row.account_last4,
  defaultPercentage: row.default_percentage,
  active: row.active,
});

/**
 * Adds an active account. The workspace's active default shares may never exceed 100 % together (approval needs
 * exactly 100): checked under a lock on the workspace row, so two operators adding at once cannot pass 100 between
 * them.
 */
export async function addPayoutAccount(em: EntityManager, input: NewPayoutAccount): Promise<AddPayoutAccountResult> {
  return em.transactional(async (tx) => {
    const [workspace] = await tx.execute<Array<{ id: string }>>('select id from workspaces where id = ? for update', [
      input.workspaceId,
    ]);
    if (!workspace) {
      return { ok: false, reason: 'workspace_not_found', message: `no workspace ${input.workspaceId}` } as const;
    }
    const [sum] = await tx.execute<Array<{ total: string | number | null }>>(
      'select coalesce(sum(default_percentage), 0) as total from payout_accounts where workspace_id = ? and active',
      [input.workspaceId],
    );
    const current = Number(sum?.total ?? 0);
    if (current + input.defaultPercentage > 100) {
      return {
        ok: false,
        reason: 'percentages_exceed_100',
        message: `the workspace's active accounts already take ${current} %; at most ${100 - current} % is left`,
      } as const;
    }
    const [row] = await tx.execute<Row[]>(
      `insert into payout_accounts (id, created_at, updated_at, workspace_id, holder_name, bank_name, account_last4,
         default_percentage, active) values (?, now(), now(), ?, ?, ?, ?, ?, true)
       returning id, workspace_id, holder_name, bank_name, account_last4, default_percentage, active`,
      [newId(), input.workspaceId, input.holderName, input.bankName, input.accountLast4, input.defaultPercentage],
    );
    return { ok: true, account: viewOf(row as Row), totalPercentage: current + input.defaultPercentage } as const;
  });
}

/** A workspace's accounts (or every workspace's), active first, oldest first. */
export async function listPayoutAccounts(em: EntityManager, workspaceId: string | null): Promise<PayoutAccountView[]> {
  const rows = await em.execute<Row[]>(
    `select id, workspace_id, holder_name, bank_name, account_last4, default_percentage, active
       from payout_accounts where (?::uuid is null or workspace_id = ?::uuid)
      order by workspace_id, active desc, id limit 500`,
    [workspaceId, workspaceId],
  );
  return rows.map(viewOf);
}
