/**
 * Builds the workflow bundle into the file named by the first argument. The worker runs this in a child process
 * before it starts: webpack's peak memory (a few hundred MB) then belongs to a process that exits, not to the
 * long-lived worker, whose resident memory is what holds up under a flash sale.
 */
import { writeFileSync } from 'node:fs';
import { buildWorkflowBundleCode } from './workflow-bundle.js';

const [target, workflowsPath] = process.argv.slice(2);
if (!target) {
  console.error('usage: build-workflow-bundle <output file> [<workflows entry module>]');
  process.exit(2);
}
// For comparing bundles in the flash-sale bench: WORKFLOW_STACK_TRACE_LIMIT overrides the depth, and
// WORKFLOW_PRELOAD_MODULES=false builds the bundle whose executions each evaluate every workflow module.
const depth = process.env.WORKFLOW_STACK_TRACE_LIMIT;
writeFileSync(
  target,
  await buildWorkflowBundleCode({
    stackTraceLimit: depth ? Number(depth) : undefined,
    preloadWorkflowModules: process.env.WORKFLOW_PRELOAD_MODULES !== 'false',
    workflowsPath,
  }),
);
