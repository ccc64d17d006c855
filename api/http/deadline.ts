/**
 * `work`, or a rejection with `message` once `timeoutMs` have passed, whichever comes first. The timer is cleared
 * either way, so a fast answer leaves nothing pending in the event loop.
 */
export async function withDeadline<T>(work: Promise<T>, timeoutMs: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), timeoutMs);
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}
