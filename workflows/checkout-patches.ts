/**
 * The checkout's patches (`patched` ids): each names a deliberate change of the checkout's story and says how
 * executions recorded before it behave. They replay that way; executions started since take the new path.
 *
 * The launch baseline (docs/deployment.md, section 7) is the story as it stands with every development-era version
 * collapsed into it: the first version (checkout-legacy.ts) and the nine patches that checkouts started with
 * `patchesInForce` from their start are no longer branches, and no history recorded before them replays. The
 * patches below are the ones that ship behind `patched` on top of the baseline.
 */

/**
 * Executions recorded before it never asked the gateway about a CONFIRMED sale again: a second payment (a first card
 * left in_process, a PSE transfer the bank settled late, a second tab) approved after the sale was paid, with its
 * notification lost, stayed charged twice. Since, a sale confirmed while another payment route had been opened keeps
 * listening for the grace period and asks the gateway after the window (plus the settlement lag), and again while a
 * payment is still pending. They replay that way.
 */
export const SECOND_PAYMENT_ASKED = 'checkout-second-payment-asked-after-confirm';
/**
 * Executions recorded before it retried a refund the gateway refused for good every ten minutes without end, in
 * silence (the refund row stayed `requested` until the history limit). Since, after REFUND_REFUSALS_BEFORE_PARKING
 * refusals in a row the refund is recorded `refund_refused` (metric, alert log, operator listing) and parked, with no
 * timer, until an operator retries it (retryRefusedRefund signal). They replay that way.
 */
export const REFUND_REFUSAL_PARKS = 'checkout-refund-refusal-parks';

/**
 * Executions recorded before it asked the gateway again, after a refusal, under the refund's first idempotency key:
 * a gateway that replays its answer for a key it has seen (gateway A declines a refund with status `rejected`, and
 * Mercado Pago replays any answer for an X-Idempotency-Key) declined every later ask, an operator's retry included.
 * Since, each ask after a refusal has a key of its own. They replay that way. Not yet in CHECKOUT_PATCHES_IN_FORCE.
 */
export const REFUND_KEY_PER_ASK = 'checkout-refund-key-per-ask';

/**
 * Executions recorded before it charged a card only with a task-queue activity: the update's workflow task scheduled
 * the charge and a second one took its answer. Since, the charge runs first as a local activity inside the pay
 * update (ARCHITECTURE.md's one exception: gateway A answers the same payment for the same idempotency key), bounded
 * by a short schedule-to-close; when it fails or times out, the same call (same key) runs as the task-queue activity.
 * A card purchase then takes two workflow tasks instead of three. They replay that way. Not yet in
 * CHECKOUT_PATCHES_IN_FORCE: it ships behind `patched` alone first (see there).
 */
export const LOCAL_CARD_CHARGE = 'checkout-local-card-charge';

/**
 * Executions recorded before it charged a card locally with nothing durable saying a charge had left. A local charge
 * runs inside the pay update's workflow task; when that task is lost (a worker crash, a task timed out on a starved
 * worker) the server can drop the update with it, so the execution never learns that money may exist: it closed the
 * sale at the deadline without asking the gateway, and the reconciler, which looks only at sales with an opened
 * attempt recorded, never looked either (simulation seeds 139, 153 and 319, starved worker). Since, the local charge's
 * activity records the CARD attempt (`charging`) before it calls the gateway (input `recordBeforeCharging`): an
 * activity's write commits even when its task is lost, so the buyer's order page, the reconciler and the execution's
 * own check find the sale opened and ask the gateway. They replay that way.
 */
export const LOCAL_CHARGE_RECORDED_FIRST = 'checkout-local-charge-recorded-first';

/**
 * The patches checkouts started now have from their start (`CHECKOUTS_STARTED_NOW.patchesInForce`): such a checkout
 * never asks `patched` for them, so its history has no marker and no TemporalChangeVersion update for them. Empty at
 * the launch baseline. Pinned to the build it started on (Worker Versioning), a checkout is only ever replayed by
 * code that knows the patches its input lists, so a patch may join this list in the release that introduces it.
 * Names a build does not know (the nine of the development era, sent by an API of an older build) are ignored.
 */
export const CHECKOUT_PATCHES_IN_FORCE: readonly string[] = [];
