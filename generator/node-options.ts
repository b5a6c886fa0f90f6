/**
 * The Node options a build runs with: bin/risk-readings.js starts `build` under them, and the bench starts its builds
 * under them, so that it measures what the command does.
 *
 * Node 24 sizes V8's young generation from the heap limit, and so from the machine's memory: semi-spaces of 64 MB on
 * the 24 GB machines of the bench, where Node 22 stops at 16 MB. A build keeps much of what it allocates (the
 * readings, then the planned documents), so it grows them to the full 64 MB, in the main thread and in each parser
 * thread: 96 MB more per thread, for no gain in time. At four times the fixture site the build peaked at 520 to 590 MB
 * on Node 24 against 340 MB on Node 22; bounded at Node 22's size, at 370 to 450 MB (bench/README.md). V8 takes the
 * bound only as a process starts, hence an option; on Node 22 it is the default already, and none is given.
 */
export function buildNodeOptions(nodeVersion: string = process.versions.node): string[] {
  return Number(nodeVersion.replace(/^v/, '').split('.')[0]) >= 24 ? ['--max-semi-space-size=16'] : [];
}
