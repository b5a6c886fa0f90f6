/** Worker thread: stages the files it is sent into one staging folder (stage-files.ts), one message per file. */
import { parentPort, workerData } from 'node:worker_threads';
import { stager, type StageJob } from './stage-files.js';

const stage = stager((workerData as { dir: string }).dir);
parentPort!.on('message', (job: StageJob) => parentPort!.postMessage(stage(job)));
