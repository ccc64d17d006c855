import { Migration } from '@mikro-orm/migrations';

export class Migration20261125193237_sale_payment_totals extends Migration {
  override name = 'Migration20261125193237_sale_payment_totals';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "sale_payment_totals" ("sale_id" uuid not null, "approved_payments" int not null, "charged" int not null, "refunded" int not null, "refunds_pending" int not null, primary key ("sale_id"));`,
    );

    this.addSql(
      `alter table "sale_payment_totals" add constraint "sale_payment_totals_sale_id_foreign" foreign key ("sale_id") references "sales" ("id") on update cascade on delete cascade;`,
    );

    // The one place that folds a sale's payment attempts into money (as the reconciler and the checkout read them):
    // approval and refund of one payment group together (a refund without an amount takes its payment's, a payment
    // without an amount is the sale's total, the only amount the checkout accepts); gateway A and B spell
    // "approved" differently. Writers of one sale take turns on the sale's row lock (in id order, so two statements
    // never wait on each other in a cycle) and then fold every committed attempt: none overwrites a newer total.
    this.addSql(`create function refresh_sale_payment_totals(targets uuid[]) returns void language plpgsql as $$
begin
  perform 1 from sales where id = any(targets) order by id for no key update;
  delete from sale_payment_totals t
   where t.sale_id = any(targets) and not exists (select 1 from payment_attempts a where a.sale_id = t.sale_id);
  insert into sale_payment_totals (sale_id, approved_payments, charged, refunded, refunds_pending)
  select p.sale_id,
         count(*) filter (where p.approved),
         coalesce(sum(coalesce(p.approved_amount, p.total)) filter (where p.approved), 0),
         coalesce(sum(coalesce(p.refund_amount, p.approved_amount, p.total)) filter (where p.refund_done), 0),
         count(*) filter (where p.refund_asked and not p.refund_done)
    from (select a.sale_id, max(s.total) as total,
                 bool_or(a.kind <> 'REFUND' and a.approved) as approved,
                 max(a.amount) filter (where a.kind <> 'REFUND' and a.approved) as approved_amount,
                 bool_or(a.kind = 'REFUND') as refund_asked,
                 bool_or(a.kind = 'REFUND' and a.status is not distinct from 'refunded') as refund_done,
                 max(a.amount) filter (where a.kind = 'REFUND') as refund_amount
            from (select x.*, coalesce((x.gateway = 'GATEWAY_A' and x.status = 'approved')
                               or (x.gateway = 'GATEWAY_B' and x.status in ('APPROVED', 'SALE_APPROVED')), false) as approved
                    from payment_attempts x where x.sale_id = any(targets)) a
            join sales s on s.id = a.sale_id
           group by a.sale_id, coalesce(a.provider_payment_id, a.gateway || ':' || a.sale_id)) p
   group by p.sale_id
  on conflict (sale_id) do update
     set approved_payments = excluded.approved_payments, charged = excluded.charged,
         refunded = excluded.refunded, refunds_pending = excluded.refunds_pending;
end $$;`);
    // Statement-level, over the rows the statement touched: a bulk insert folds each sale once.
    this.addSql(`create function payment_attempts_inserted() returns trigger language plpgsql as $$
begin
  perform refresh_sale_payment_totals(array(select distinct sale_id from inserted));
  return null;
end $$;`);
    this.addSql(`create function payment_attempts_updated() returns trigger language plpgsql as $$
begin
  perform refresh_sale_payment_totals(array(select sale_id from updated union select sale_id from replaced));
  return null;
end $$;`);
    this.addSql(`create function payment_attempts_deleted() returns trigger language plpgsql as $$
begin
  perform refresh_sale_payment_totals(array(select distinct sale_id from removed));
  return null;
end $$;`);
    this.addSql(
      `create trigger payment_attempts_fold_inserted after insert on payment_attempts referencing new table as inserted for each statement execute function payment_attempts_inserted();`,
    );
    this.addSql(
      `create trigger payment_attempts_fold_updated after update on payment_attempts referencing old table as replaced new table as updated for each statement execute function payment_attempts_updated();`,
    );
    this.addSql(
      `create trigger payment_attempts_fold_deleted after delete on payment_attempts referencing old table as removed for each statement execute function payment_attempts_deleted();`,
    );
    // Sales recorded before this migration.
    this.addSql(`select refresh_sale_payment_totals(array(select distinct sale_id from payment_attempts));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop trigger if exists payment_attempts_fold_inserted on payment_attempts;`);
    this.addSql(`drop trigger if exists payment_attempts_fold_updated on payment_attempts;`);
    this.addSql(`drop trigger if exists payment_attempts_fold_deleted on payment_attempts;`);
    this.addSql(`drop function if exists payment_attempts_inserted();`);
    this.addSql(`drop function if exists payment_attempts_updated();`);
    this.addSql(`drop function if exists payment_attempts_deleted();`);
    this.addSql(`drop function if exists refresh_sale_payment_totals(uuid[]);`);
    this.addSql(`drop table if exists "sale_payment_totals" cascade;`);
  }
}
