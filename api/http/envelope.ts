import { z } from 'zod';

/** The contract's envelopes (part 2): `{ data }` for one resource, `{ data, page, warnings? }` for lists. */
export const WarningSchema = z
  .object({
    code: z.string(),
    message: z.string(),
    field: z.string().optional(),
    activeWorkspaceId: z.string().optional(),
    activeWorkspaceName: z.string().optional(),
    accessibleWorkspaces: z.number().int().optional(),
    suggestedWorkspaceId: z.string().optional(),
    suggestedWorkspaceName: z.string().optional(),
  })
  .meta({ id: 'Warning' });
export type Warning = z.infer<typeof WarningSchema>;

export const PageSchema = z
  .object({ nextCursor: z.string().nullable(), hasMore: z.boolean(), total: z.number().int().optional() })
  .meta({ id: 'Page' });
export type Page = z.infer<typeof PageSchema>;

export const dataOf = <T extends z.ZodType>(schema: T) => z.object({ data: schema });

export const listOf = <T extends z.ZodType>(schema: T) =>
  z.object({ data: z.array(schema), page: PageSchema, warnings: z.array(WarningSchema).optional() });

export const ErrorBodySchema = z
  .object({
    error: z.object({
      code: z.string(),
      message: z.string(),
      retryable: z.boolean(),
      details: z.unknown(),
    }),
  })
  .meta({ id: 'Error' });
