/** Worker thread: parses the pages it is sent, one message per page. */
import { parentPort } from 'node:worker_threads';
import { parsePage, type ParseJob } from './parse-page.js';

parentPort!.on('message', async (job: ParseJob & { id: number }) => {
  parentPort!.postMessage({ id: job.id, outcome: await parsePage(job) });
});
