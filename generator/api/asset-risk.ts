/** AssetRisk: one asset's readings, every model key present (null where the asset lacks the model). */
import { z } from 'zod';
import type { Asset } from '../catalog/catalog.js';
import { AssetRisk as AssetRiskShape, type AssetRisk } from '../contract/shapes.js';
import { READINGS, type AssetReading, type ReadingKey, type Readings } from '../site/readings.js';
import type { Carried } from '../site/carry.js';
import { dailyReadings, staleModels, type StaleInput } from '../contract/stale.js';
import type { Stamped } from '../contract/envelope.js';
import { newest } from './envelope.js';
import type { MarketContext } from './market-context.js';

export type { AssetRisk } from '../contract/shapes.js';

/** The readings one asset's pages gave this build, merged: each reading comes from one page of the asset. */
export type AssetReadings = Partial<Readings>;

type Field = keyof AssetRisk;
/** The readings of one asset, from the registry, in its order. */
const ASSET_READINGS = (Object.entries(READINGS) as [ReadingKey, AssetReading | { scope: 'market' }][]).filter(
  (e): e is [ReadingKey, AssetReading] => e[1].scope === 'asset',
);
/**
 * The fields readings fill, in AssetRisk's order, each with the readings that make it (one per asset: kinds of
 * different classes may give it) and those that add a part to it.
 */
const FIELDS = (Object.keys(AssetRiskShape.shape) as Field[]).flatMap((field) => {
  const readings = ASSET_READINGS.filter(([, r]) => r.field === field);
  const makers = readings.filter(([, r]) => !r.part);
  return makers.length ? [{ field, makers, parts: readings.filter(([, r]) => r.part), keys: keysOf(field) }] : [];
});

/**
 * What the previous tree published of an asset's readings that this one publishes null (a card its page now prints
 * as N/A, decision 19; a model the catalogue no longer lists for it), each as `field` or `field.key (was V)`: the
 * report names them, so nothing published turns null without it saying so.
 */
export function nulledReadings(before: AssetRisk, now: AssetRisk): string[] {
  const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
  const out: string[] = [];
  for (const { field } of FIELDS) {
    const [was, is]: unknown[] = [before[field], now[field]];
    if (!isRecord(was)) continue;
    if (is === null) out.push(field);
    else if (isRecord(is))
      for (const [key, v] of Object.entries(was))
        if (v !== null && typeof v !== 'object' && is[key] === null) out.push(`${field}.${key} (was ${JSON.stringify(v)})`);
  }
  return out;
}

/** A field's keys in the contract's order, which is the order of the served file's keys. */
function keysOf(field: Field): string[] {
  const schema: z.ZodType = AssetRiskShape.shape[field];
  const inner = schema instanceof z.ZodNullable ? schema.unwrap() : schema;
  return inner instanceof z.ZodObject ? Object.keys(inner.shape) : [];
}

/** The readings that fill each field, from the page or carried; a field none of whose readings the asset has is null. */
function readingFields(asset: Asset, read: AssetReadings, carried: Carried): Partial<AssetRisk> {
  const has = (r: AssetReading) => r.model === null || asset.models.includes(r.model);
  const out: Record<string, unknown> = {};
  for (const { field, makers, parts, keys } of FIELDS) {
    const had = makers.filter(([, r]) => has(r));
    const made = had.map(([key, r]) => partOf(key, r)).find((v) => v !== undefined);
    if (made === undefined) {
      out[field] = had.length ? had[0]![1].none : null;
      continue;
    }
    const value: Record<string, unknown> = { ...made };
    for (const [key, part] of parts) Object.assign(value, partOf(key, part) ?? part.none);
    out[field] = keys.length ? Object.fromEntries(keys.map((k) => [k, value[k]])) : value;
  }
  return out as Partial<AssetRisk>;

  function partOf(key: ReadingKey, r: AssetReading): object | undefined {
    const fresh = read[key];
    return fresh !== undefined ? (r.serve(fresh) as object) : carried[key];
  }
}

export function assembleAssetRisk(
  asset: Asset,
  read: AssetReadings,
  carried: Carried,
  market: { freeTier: ReadonlySet<string>; ranks: ReadonlyMap<string, number>; context: MarketContext },
): AssetRisk {
  const crypto = asset.asset_class === 'CRYPTO';
  const fields = readingFields(asset, read, carried);
  const models = { asset_class: asset.asset_class, ...fields } as StaleInput;
  return {
    symbol: asset.symbol,
    name: asset.name,
    asset_class: asset.asset_class,
    universes: [...asset.universes],
    as_of: newest(dailyReadings(models)),
    free_tier: market.freeTier.has(asset.symbol),
    market_cap_rank: crypto ? (market.ranks.get(asset.symbol) ?? null) : null,
    ...fields,
    market_context: market.context,
    stale_models: staleModels(models),
  } as AssetRisk;
}

/** The model readings of an AssetRisk, for the envelope: every field a reading fills that names its model. */
export const riskReadings = (r: AssetRisk): (Stamped | null)[] =>
  FIELDS.map(({ field }) => r[field] as unknown as Stamped | null).filter((v) => v === null || typeof v?.model === 'string');

/** Models that produced readings beyond the fields' own `model`: a part's (the TWAP risk level's). */
export const riskExtraModels = (r: AssetRisk): (string | null)[] =>
  FIELDS.flatMap(({ field, parts }) =>
    parts.flatMap(([, part]) => {
      const value = r[field] as Record<string, unknown> | null;
      return Object.keys(part.none as object)
        .filter((k) => k.endsWith('_model'))
        .map((k) => (value?.[k] as string | null | undefined) ?? null);
    }),
  );
