/**
 * What the reconciler bench adds to a reports-bench workspace (bench/lib/reports-seed.ts) so every sweep has the
 * shape of a busy production database, in a few set-based statements:
 *  - a NOTIFICATION row beside each approved card charge (the gateway's notification of the same payment), so approved
 *    payment records outnumber sales as they do live;
 *  - a `requested` REFUND row before each `refunded` one (the request, then the gateway's answer);
 *  - an OPEN widget attempt on every gateway B sale, so confirmed sales have "another payment opened" to ask about;
 *  - `stranded` approved payments on abandoned sales with no refund: what the stranded-payment sweep must find;
 *  - twelve monthly membership payments per subscriber (closed, with a gateway link), and a few refunds stuck
 *    REFUND_REQUESTED.
 * Every timestamp is in the past, older than any sweep's margin. Deterministic with the reports seed's `setseed`.
 */
import type pg from 'pg';

export interface ReconcilerSeedCounts {
  approvedPaymentRecords: number;
  stranded: number;
  membershipPayments: number;
}

export async function seedReconcilerExtras(
  client: pg.Client,
  options: { workspaceId: string; stranded: number },
): Promise<ReconcilerSeedCounts> {
  const q = (text: string, params: unknown[] = []) => client.query(text, params);
  await q(
    `insert into payment_attempts (id, sale_id, gateway, kind, provider_payment_id, status, amount, created_at)
     select gen_random_uuid(), a.sale_id, a.gateway, 'NOTIFICATION', a.provider_payment_id, a.status, a.amount,
            a.created_at + interval '5 seconds'
       from payment_attempts a join sales s on s.id = a.sale_id
      where s.workspace_id = $1 and a.kind = 'CARD'`,
    [options.workspaceId],
  );
  await q(
    `insert into payment_attempts (id, sale_id, gateway, kind, provider_payment_id, status, amount, created_at)
     select gen_random_uuid(), a.sale_id, a.gateway, 'REFUND', a.provider_payment_id, 'requested', a.amount,
            a.created_at - interval '10 seconds'
       from payment_attempts a join sales s on s.id = a.sale_id
      where s.workspace_id = $1 and a.kind = 'REFUND' and a.status = 'refunded'`,
    [options.workspaceId],
  );
  await q(
    `insert into payment_attempts (id, sale_id, gateway, kind, provider_payment_id, status, amount, created_at)
     select gen_random_uuid(), s.id, 'GATEWAY_B', 'OPEN', null, null, null, s.created_at
       from sales s
      where s.workspace_id = $1 and s.payment_provider = 'GATEWAY_B' and s.status in ('CONFIRMED', 'REFUNDED')`,
    [options.workspaceId],
  );
  // Money a lost notification and a failed checkout left behind: approved, on a sale closed unpaid, never refunded.
  await q(
    `insert into payment_attempts (id, sale_id, gateway, kind, provider_payment_id, status, amount, created_at)
     select gen_random_uuid(), s.id, 'GATEWAY_A', 'LATE_PAYMENT', 'stranded-' || s.id, 'approved', s.total,
            coalesce(s.closed_at, s.created_at) + interval '1 minute'
       from (select id, total, closed_at, created_at from sales
              where workspace_id = $1 and status = 'ABANDONED' order by id limit $2) s`,
    [options.workspaceId, options.stranded],
  );
  await q(
    `insert into membership_payments (id, created_at, updated_at, workspace_id, subscription_id, period_number, reference,
                                      gateway, preference_id, checkout_url, provider_payment_id, amount, currency, status,
                                      expires_at, approved_at)
     select gen_random_uuid(), m.at, m.at + interval '10 minutes', $1, m.subscription_id, m.period,
            'MB-' || upper(substr(md5(m.subscription_id::text || m.period), 1, 12)), 'GATEWAY_A',
            'pref-' || md5(m.subscription_id::text || m.period),
            'http://127.0.0.1:4010/checkout/' || md5(m.subscription_id::text || m.period),
            case when m.kind = 'EXPIRED' then null else 'mb-' || md5(m.subscription_id::text || m.period) end,
            30000, 'COP', m.kind, m.at + interval '3 days',
            case when m.kind = 'APPROVED' then m.at + interval '10 minutes' end
       from (select s.id as subscription_id, p as period, now() - (13 - p) * interval '30 days' as at,
                    case when random() < 0.1 then 'EXPIRED'
                         when random() < 0.005 then 'REFUND_REQUESTED' else 'APPROVED' end as kind
               from membership_subscriptions s cross join generate_series(1, 12) p
              where s.workspace_id = $1) m`,
    [options.workspaceId],
  );
  const {
    rows: [counts],
  } = await q(
    `select (select count(*) from payment_attempts a join sales s on s.id = a.sale_id
              where s.workspace_id = $1 and a.kind in ('CARD', 'NOTIFICATION', 'STATUS_CHECK', 'LATE_PAYMENT')
                and a.provider_payment_id is not null) as approved,
            (select count(*) from membership_payments where workspace_id = $1) as memberships`,
    [options.workspaceId],
  );
  return {
    approvedPaymentRecords: Number(counts.approved),
    stranded: options.stranded,
    membershipPayments: Number(counts.memberships),
  };
}
