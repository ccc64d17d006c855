/**
 * Which payment gateway a sale pays through. The choice is the server's (contract 4.3): gateway B for workspaces on
 * the legend plan that are on the gateway B allowlist, and for events that charge only through gateway B; gateway A
 * otherwise. Pure, so the payment activities and the gateway notification route apply the same rule.
 */
export type PaymentGateway = 'GATEWAY_A' | 'GATEWAY_B';

export interface GatewayEligibility {
  plan: string;
  gatewayBAllowlisted: boolean;
}

/** The gateway a workspace is eligible for. */
export const workspaceGateway = (workspace: GatewayEligibility): PaymentGateway =>
  workspace.plan === 'LEGEND' && workspace.gatewayBAllowlisted ? 'GATEWAY_B' : 'GATEWAY_A';

/** The gateway a sale of this event is offered. */
export const saleGateway = (event: { gatewayBOnly: boolean }, workspace: GatewayEligibility): PaymentGateway =>
  event.gatewayBOnly || workspaceGateway(workspace) === 'GATEWAY_B' ? 'GATEWAY_B' : 'GATEWAY_A';

/**
 * Whether gateway A's merchant account can charge a sale in `currency`. `accepted` is GATEWAY_A_CURRENCIES: gateway A
 * charges in its account's currency and takes no currency on a card payment, so a sale in another currency would be
 * charged in the wrong money (and then refunded by the amount check).
 */
export const gatewayAChargesIn = (currency: string, accepted: string): boolean =>
  accepted.split(',').some((code) => code.trim().toUpperCase() === currency);
