/** `sector_feed.json`: the equity universes' sector indicators in our documented schema (docs/inputs.md), dated by its clock. */
import { z } from 'zod';
import { PageError } from '../errors.js';
import { defineKind } from '../kind.js';
import { validated, type SectorReadings } from '../readings.js';
import { sectorReadings } from '../sector.js';

const nullableNum = z.number().finite().nullable();
const FeedSchema = z.object({
  schema: z.literal(1),
  generated_at: z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?Z$/),
  universes: z.record(
    z.string(),
    z.object({
      fear_greed: z.object({ value: nullableNum, label: z.string().nullable(), sma_30: nullableNum }),
      peak_valley: z.object({ score: nullableNum, zone: z.string().nullable() }),
      macro_risk: z.object({ score: nullableNum, status: z.string().nullable() }),
    }),
  ),
});

export const sectorFeed = defineKind({
  name: 'sector_feed',
  published: { by: 'market', files: ['sector_feed.json'] },
  readings: ['sectors'],
  archive: false,
  cadence: 'daily',
  parse(page, file) {
    let json: unknown;
    try {
      json = JSON.parse(page.toString('utf8'));
    } catch (e) {
      throw new PageError(file, '(document)', `not JSON: ${(e as Error).message}`);
    }
    const feed = validated(FeedSchema, json, file, 'feed');
    const as_of = feed.generated_at.slice(0, 16) + ':00Z';
    const sectors: Record<string, SectorReadings> = {};
    for (const [u, s] of Object.entries(feed.universes)) {
      sectors[u] = sectorReadings(
        {
          fg: s.fear_greed.value,
          fgLabel: s.fear_greed.label,
          sma: s.fear_greed.sma_30,
          pv: s.peak_valley.score,
          zone: s.peak_valley.zone,
          macro: s.macro_risk.score,
          status: s.macro_risk.status,
        },
        as_of,
        'feed_generated_at',
        file,
      );
    }
    return { sectors };
  },
});
