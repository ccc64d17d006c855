/**
 * Replays workflow histories (JSON as exported by the Temporal CLI or UI) against the current workflow code and
 * exits non-zero if any would not replay deterministically. Run before deploying a workflow change:
 *   npx tsx scripts/replay-histories.ts history1.json [history2.json …]
 * Payloads are decoded with the service's payload codec (PAYLOAD_CODEC_KEYS), so histories exported encrypted by
 * `temporal workflow show --output json` replay as they are; histories recorded before the codec are plain and pass.
 * Prints one JSON line per history: { file, ok, error? }.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { Worker } from '@temporalio/worker';
import { loadEnv } from '../config/env.js';
import { temporalDataConverter } from '../config/payload-codec.js';
import { workerTracingOptions } from '../observability/temporal-tracing.js';
import { buildWorkflowBundleCode } from '../worker/workflow-bundle.js';

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: replay-histories.ts <history.json>…');
  process.exit(2);
}
const env = loadEnv();
const dataConverter = temporalDataConverter(env);
// One bundle for every history (bundling is most of the cost of a replay), built as every worker builds it: with the
// workflow interceptors (tracing, request ids) that production runs; or the one the workers run, when prebuilt.
const code = env.WORKFLOW_BUNDLE_PATH
  ? readFileSync(env.WORKFLOW_BUNDLE_PATH, 'utf8')
  : await buildWorkflowBundleCode();
// One replay worker for every history: starting one (its native worker and workflow thread) costs more than a replay.
const replayed = Worker.runReplayHistories(
  {
    workflowBundle: { code },
    replayName: 'replay-histories',
    dataConverter,
    sinks: workerTracingOptions(null).sinks,
  },
  // The file's name stands for the workflow id: it names the result, and no two files share it.
  files.map((file) => ({ workflowId: basename(file), history: JSON.parse(readFileSync(file, 'utf8')) })),
);
let failed = 0;
for await (const result of replayed) {
  if (result.error) failed += 1;
  console.log(
    JSON.stringify({
      file: result.workflowId,
      ok: !result.error,
      ...(result.error ? { error: result.error.message } : {}),
    }),
  );
}
process.exit(failed === 0 ? 0 : 1);
