/**
 * A local card charge whose workflow task is lost must still end as one CONFIRMED sale or a refund. The starved-worker
 * simulation found it stranded (seeds 139, 153, 319 with SIM_LOCAL_CARD_CHARGE=1): the charge ran inside the pay
 * update's task, the gateway approved it, the task timed out on a stalled process before its next step, and the
 * update came back after the payment window had ended, so its validator refused it and the execution never heard of
 * the charge. It closed the sale without asking the gateway, and nothing in the database said a charge had left, so
 * neither the reconciler nor the execution's own check asked either. run-lost-local-charge.ts plays that story
 * deterministically on the real checkout code and a local Temporal server (a child process, as the simulation).
 */
import { runReportingScript } from './simulate.js';

interface StoryOutcome {
  updateOutcome: string;
  updateInHistory: boolean;
  violations: string[];
  story: string[];
}

const playStory = async () => {
  const { report, stderr } = await runReportingScript<StoryOutcome>('test/simulation/run-lost-local-charge.ts');
  return { outcome: report, stderr };
};

test('a local charge approved in a workflow task that is lost, with its update: the money still buys the sale', async () => {
  const { outcome, stderr } = await playStory();
  if (!outcome) throw new Error(`the story did not report:\n${stderr.slice(-4000)}`);
  process.stdout.write(`lost local charge: ${outcome.story.join(' | ')}\n`);
  // The story happened as meant: the gateway approved the charge and the execution never accepted its update.
  expect(outcome.story).toContain('pay pa-1-1 approved');
  expect(outcome.updateInHistory).toBe(false);
  expect(outcome.updateOutcome).toMatch(/^failed/);
  expect(outcome.violations).toEqual([]);
  expect(outcome.story).toContain('late confirmed by pa-1-1');
}, 120_000);
