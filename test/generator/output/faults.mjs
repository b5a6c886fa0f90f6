// Test-only preload (`node --import`), never loaded by the product. Fault injection on the build's output folder:
//   RR_FAULT_OUT               the folder whose operations are watched
//   RR_FAULT_KILL_AFTER=k      SIGKILL the process right after its k-th rename/link/symlink/rm/unlink under it
//   RR_FAULT_HOLD_LOCK_UNTIL=f hold still once the build lock is taken, until the file f exists (a second build races it)
//   RR_FAULT_COUNT_FILE        where to write how many watched operations a run that was not killed made
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';

const out = process.env.RR_FAULT_OUT;
const killAt = Number(process.env.RR_FAULT_KILL_AFTER ?? 0);
const holdUntil = process.env.RR_FAULT_HOLD_LOCK_UNTIL;
let count = 0;

const under = (p) => !!out && (typeof p === 'string' || p instanceof URL) && (String(p) === out || String(p).startsWith(out + '/'));
const watched = (args) => under(args[0]) || under(args[1]);
const after = (args) => {
  if (!watched(args)) return;
  count++;
  if (count === killAt) process.kill(process.pid, 'SIGKILL');
};

for (const name of ['rename', 'link', 'symlink', 'rm', 'unlink', 'rmdir']) {
  const orig = fs.promises[name];
  fs.promises[name] = async function (...args) {
    const r = await orig.apply(this, args);
    after(args);
    return r;
  };
  const origSync = fs[`${name}Sync`];
  fs[`${name}Sync`] = function (...args) {
    const r = origSync.apply(this, args);
    after(args);
    return r;
  };
}

const origOpen = fs.promises.open;
fs.promises.open = async function (...args) {
  const fh = await origOpen.apply(this, args);
  if (holdUntil && under(args[0]) && String(args[0]).endsWith('/.lock') && args[1] === 'wx') {
    const close = fh.close.bind(fh);
    fh.close = async () => {
      await close();
      const nap = new Int32Array(new SharedArrayBuffer(4));
      while (!fs.existsSync(holdUntil)) Atomics.wait(nap, 0, 0, 20);
    };
  }
  return fh;
};

syncBuiltinESMExports();
process.on('exit', () => {
  if (process.env.RR_FAULT_COUNT_FILE) fs.writeFileSync(process.env.RR_FAULT_COUNT_FILE, String(count));
});
