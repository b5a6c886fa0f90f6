/** One rule for where a deployed tree's files are, for the edge's ORIGIN_URL and the build's --previous URL alike. */
import { describe, expect, it } from 'vitest';
import { treeBase } from '../../../generator/contract/tree-url.js';

describe('treeBase', () => {
  it('takes the folder holding v1/ or v1/ itself, with or without the last slash, and drops query and fragment', () => {
    for (const url of [
      'https://cdn.example/trees/prod',
      'https://cdn.example/trees/prod/',
      'https://cdn.example/trees/prod/v1',
      'https://cdn.example/trees/prod/v1/',
      'https://cdn.example/trees/prod/v1//?x=1#top',
    ])
      expect(treeBase(url), url).toBe('https://cdn.example/trees/prod/v1/');
    expect(treeBase('https://cdn.example')).toBe('https://cdn.example/v1/');
    // A folder merely ending in v1 is not v1/.
    expect(treeBase('https://cdn.example/tv1')).toBe('https://cdn.example/tv1/v1/');
  });
});
