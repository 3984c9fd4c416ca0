import * as z from 'zod/mini';
import en from 'zod/v4/locales/en.js';

/**
 * What the functions' schemas build on: zod/mini, which builds its schemas at a module's init
 * several times faster than classic zod (docs/decisions/0018-zod-mini-in-functions.md). Every
 * module that builds zod/mini schemas imports this one, for its helpers or for its effect:
 */

/**
 * zod/mini installs no messages of its own (every issue would read "Invalid input"): the English
 * ones classic zod installs, so the API's messages are the same whichever flavour checked the input.
 */
z.config(en());

/** An integer of at least `min` (and at most `max`): classic zod's `z.number().int().min().max()`. */
export function intIn(min: number, max?: number) {
  return z.number().check(z.int(), z.minimum(min), ...(max === undefined ? [] : [z.maximum(max)]));
}
