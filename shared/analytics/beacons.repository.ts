import { deduplicatedBy, selectRows, type Analytics } from './analytics.js';
import type { BeaconState } from '../tracker/beacon.js';

/** The queries of ClickHouse `visit_beacons`: each visit's latest beacon state (a ReplacingMergeTree by version). */
export function beaconsRepository(analytics: Analytics) {
  const { client } = analytics;
  return {
    /** Inserts beacon states, deduplicated by `token`. */
    async insertStates(states: BeaconState[], token: string): Promise<void> {
      await client.insert({ table: 'visit_beacons', values: states, format: 'JSONEachRow', clickhouse_settings: deduplicatedBy(token) });
    },
    /** The stored state (merged: FINAL) of each of these visits that has one. */
    async statesOf(ids: string[]): Promise<BeaconState[]> {
      return selectRows<BeaconState>(client, 'SELECT * FROM visit_beacons FINAL WHERE visit_id IN {ids:Array(UUID)}', { ids });
    },
  };
}
