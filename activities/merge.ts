/**
 * Merges the activity factories' objects into the one object the worker registers, refusing a name defined twice.
 * Temporal dispatches an activity by its name alone, so with a plain spread the later factory's function silently
 * replaces the earlier one's and every workflow calling the earlier one runs the wrong code (it happened once:
 * a membership's `recordRefundRefused` ran the checkout's and failed forever). A worker with such a clash does not start.
 */

type UnionToIntersection<U> = (U extends unknown ? (arg: U) => void : never) extends (arg: infer I) => void ? I : never;

/** Each group is one factory's activities, keyed by a label the error names (the factory or area). */
export type ActivityGroups = Record<string, object>;

export type MergedActivities<G extends ActivityGroups> = UnionToIntersection<G[keyof G]>;

export class DuplicateActivityNameError extends Error {
  constructor(readonly duplicates: { name: string; groups: string[] }[]) {
    super(
      `activity names must be unique across all factories (Temporal dispatches by name; a duplicate silently replaces ` +
        `the other): ${duplicates.map((d) => `"${d.name}" is defined by ${d.groups.join(' and ')}`).join('; ')}`,
    );
    this.name = 'DuplicateActivityNameError';
  }
}

export function mergeActivities<G extends ActivityGroups>(groups: G): MergedActivities<G> {
  const owners = new Map<string, string[]>();
  const merged: Record<string, unknown> = {};
  for (const [group, activities] of Object.entries(groups)) {
    for (const [name, activity] of Object.entries(activities)) {
      const seen = owners.get(name);
      if (seen) seen.push(group);
      else owners.set(name, [group]);
      merged[name] = activity;
    }
  }
  const duplicates = [...owners]
    .filter(([, groupNames]) => groupNames.length > 1)
    .map(([name, groupNames]) => ({ name, groups: groupNames }));
  if (duplicates.length > 0) throw new DuplicateActivityNameError(duplicates);
  return merged as MergedActivities<G>;
}
