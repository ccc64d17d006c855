import type { ApiServices } from '../../api/services.js';

/**
 * Services whose Temporal client fails the test on any call, for unit tests of rules that must answer (or refuse)
 * before asking a workflow execution. `what` names the execution in the failure.
 */
export function servicesWithoutTemporal(env: Record<string, unknown>, what: string): ApiServices {
  const workflow = new Proxy(
    {},
    {
      get: () => () => {
        throw new Error(`${what} must not be asked`);
      },
    },
  );
  return { env, temporal: { workflow } } as unknown as ApiServices;
}
