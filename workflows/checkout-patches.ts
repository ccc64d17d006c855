/**
 * The checkout's patches (`patched` ids): each names a deliberate change of the checkout's story and says how
 * executions recorded before it behave. They replay that way; executions started since take the new path.
 *
 * A checkout started with `patchesInForce` (CheckoutInput) has the patches it lists from its start, so it never asks
 * `patched` for them: no marker and no TemporalChangeVersion update per patch in its history.
 */

/** The version marker: executions without it in their history replay the first version (checkout-legacy.ts). */
export const CHECKOUT_V2 = 'checkout-v2-money-never-stranded';
/**
 * Executions recorded before it read every gateway B SALE_APPROVED of the paying charge, the first one too, as a
 * re-notification (FT_SALE_APPROVED_POST_CONFIRM) once the sale was confirmed; they replay that way.
 */
export const GATEWAY_B_FIRST_APPROVAL = 'checkout-gateway-b-first-approval';
/**
 * Executions recorded before it retried a failed ask of the gateway on the poll interval, which each failure doubled:
 * after an outage at the deadline the answer could wait minutes. They replay that way.
 */
export const OWED_ASK_RETRY = 'checkout-owed-ask-retry';
/**
 * Executions recorded before it never found their sale closed by someone else while a payment confirmed it: since
 * the deadline itself frees the stock (worker/lapsed-hold-sweep.ts), such a payment is judged as late money.
 */
export const DEADLINE_FREES_STOCK = 'checkout-deadline-frees-stock';
/**
 * Executions recorded before it read every payment from the gateway again before judging it: a card charge's answer
 * and a notification the API had just re-read (both already the gateway's own record), and news of the payment that
 * already paid the sale. They replay that way. Since, a card purchase needs no task-queue activity besides the charge
 * and the ticket email.
 */
export const NEWS_ALREADY_READ = 'checkout-news-already-read';
/**
 * Executions recorded before it asked the database whether a payment was ever opened when its own memory said none
 * was. An open whose record committed in a workflow task that was then lost (a worker crash, a task timed out on a
 * starved worker) left the execution sure that nobody could have paid: it skipped every ask of the gateway, the
 * reconciler's included, and money paid on that open waited. They replay that way.
 */
export const OPEN_KNOWN_FROM_DATABASE = 'checkout-open-known-from-database';
/**
 * Executions recorded before they finished what a lost workflow task had started for late money. A task that decided
 * (and recorded) a refund, or confirmed the sale, can be lost before it completes (a worker crash, a task timed out
 * on a starved worker); the retried task then found the payment "being given back", or the sale "already confirmed"
 * by this very payment, and left the refund to nobody or the tickets unsent. They replay that way.
 */
export const LATE_MONEY_AFTER_LOST_TASK = 'checkout-late-money-after-lost-task';
/**
 * Executions recorded before they compensated a reservation whose update never reached them. A reserve step can
 * commit the sale and lose its workflow task with the worker (kill -9); if the server then drops the update (its
 * registry does not outlive every failure) the execution waits out its reserve timeout and, without this, ended with
 * the sale PENDING and its stock held until the reconciler or the lapsed-hold sweep found it. They replay that way.
 */
export const LOST_RESERVATION = 'checkout-compensate-lost-reservation';
/**
 * Executions recorded before they ignored news that a payment the gateway had already rejected was still pending.
 * Such news is a read older than the rejection: the API re-reads each notification's payment before signalling, and
 * the first notification's read (pending) can reach the checkout after the settlement's (rejected), whose write it
 * then undid, leaving the sale showing a pending payment that had failed. They replay that way.
 */
export const STALE_PENDING_NEWS = 'checkout-ignore-stale-pending-news';

/**
 * The patches checkouts started now have from their start (`CHECKOUTS_STARTED_NOW.patchesInForce`). A new patch ships
 * first behind `patched` alone and joins this list in a later release, once no worker without it can pick up a
 * checkout: a worker that does not know a listed patch runs the old path, and a newer one would replay it on the new.
 */
export const CHECKOUT_PATCHES_IN_FORCE = [
  CHECKOUT_V2,
  GATEWAY_B_FIRST_APPROVAL,
  OWED_ASK_RETRY,
  DEADLINE_FREES_STOCK,
  NEWS_ALREADY_READ,
  OPEN_KNOWN_FROM_DATABASE,
  LATE_MONEY_AFTER_LOST_TASK,
  LOST_RESERVATION,
  STALE_PENDING_NEWS,
] as const;
