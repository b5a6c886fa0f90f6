/**
 * Where a deployed tree's files are, from the URL an operator gives (the edge's `ORIGIN_URL`, the build's `--previous
 * URL`): the folder holding `v1/`, or `v1/` itself, with or without its last slash. One rule for both, so a URL that
 * works for one works for the other. Its query and fragment are dropped: a file's URL is the base and its path.
 */
export function treeBase(url: string): string {
  const u = new URL(url);
  u.search = '';
  u.hash = '';
  const path = u.pathname.replace(/\/+$/, '');
  u.pathname = /\/v1$/.test(path) ? `${path}/` : `${path}/v1/`;
  return u.toString();
}
