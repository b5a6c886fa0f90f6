/** What a step refused with: the code and message of the Refusal it threw (or of the promise it rejected). */
import { Refusal } from '../../../auth-shim/refusal.js';

export async function refusalOf(step: () => unknown): Promise<{ code: string; message: string; headers: Record<string, string> } | null> {
  try {
    await step();
    return null;
  } catch (e) {
    if (e instanceof Refusal) return { code: e.code, message: e.message, headers: e.headers };
    throw e;
  }
}
