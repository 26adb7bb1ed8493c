/**
 * Generators shared by the property tests: tool names from a small universe (so that layers overlap)
 * in many spellings of one canonical form (so that canonicalisation is on every path).
 */
import fc from 'fast-check';

/** Stems: plain, namespaced (a different name from the plain stem), and ones that need full case folding. */
export const STEMS = [
  'search',
  'refund',
  'fetch',
  'delete_user',
  'mcp:search',
  'github:search',
  'straße',
  'ǆemal',
  'ꮳꮃꭹ',
  'σίσυφος',
  'ﬁle',
] as const;

const fullWidth = (s: string): string =>
  s.replace(/[\x21-\x7e]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0));
const upper = (s: string): string => s.toUpperCase();
const title = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

/** Spellings with the same canonical form as the stem. */
export const SPELLINGS: readonly ((s: string) => string)[] = [
  (s) => s,
  upper,
  title,
  fullWidth,
  (s) => ` ${s}\u3000`,
  (s) => `\u2003${upper(s)}\u00a0`,
  (s) => s.replace('ss', 'ß').replace('ß', 'ss'),
];

/** One stem in one spelling. */
export const spelledName = fc
  .tuple(fc.constantFrom(...STEMS), fc.integer({ min: 0, max: SPELLINGS.length - 1 }))
  .map(([stem, i]) => SPELLINGS[i]!(stem));

/** A name that may be outside the universe (random text), for queries. */
export const anyQuery = fc.oneof(
  { weight: 4, arbitrary: spelledName },
  { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
);

/** Distinct stems, each in one spelling: a declaration without collisions. */
export const declaration = fc
  .uniqueArray(fc.constantFrom(...STEMS), { maxLength: STEMS.length })
  .chain((stems) =>
    fc.tuple(...stems.map((stem) => fc.integer({ min: 0, max: SPELLINGS.length - 1 }).map((i) => SPELLINGS[i]!(stem)))),
  );

/** A layer: undefined or null (states nothing) or a list of names (possibly empty: refuses everything). */
export const layer = fc.oneof(fc.constant(undefined), fc.constant(null), fc.array(spelledName, { maxLength: 8 }));
