/**
 * What a sale's checkout execution was told: the signals of one name in its history, decoded with the test
 * client's own data converter (payloads are encrypted by the payload codec).
 */
import type { Payload } from '@temporalio/common';
import { checkoutWorkflowId } from '../../workflows/definitions.js';
import type { TestApi } from './stack.js';

export async function signalsReceived<T>(api: TestApi, saleId: string, signalName: string): Promise<T[]> {
  const client = api.services.temporal;
  const history = await client.workflow.getHandle(checkoutWorkflowId(saleId)).fetchHistory();
  const { payloadConverter, payloadCodecs } = client.options.loadedDataConverter;
  const found: T[] = [];
  for (const event of history.events ?? []) {
    const signal = event.workflowExecutionSignaledEventAttributes;
    if (signal?.signalName !== signalName) continue;
    let payloads = (signal.input?.payloads ?? []) as Payload[];
    for (const codec of [...payloadCodecs].reverse()) payloads = await codec.decode(payloads);
    const [first] = payloads;
    if (first) found.push(payloadConverter.fromPayload<T>(first));
  }
  return found;
}
