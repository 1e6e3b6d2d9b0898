// @a2a-js/sdk 0.3 (A2A protocol 0.3), with its default options, against
// the same server and card URL: send, get, stream, cancel, and one key's
// task hidden from another key.
import { ClientFactory } from 'a2a-legacy/client';
import { env, check, assert, rejects, bearer, newID, done } from './lib.mjs';

const url = env('H4R_URL');
const key = bearer(env('H4R_KEY'));
const other = bearer(env('H4R_KEY2'));

function textMessage(text) {
  return { message: { kind: 'message', messageId: newID(), role: 'user', parts: [{ kind: 'text', text }] } };
}

function packOf(task) {
  assert(task.kind === 'task' && task.status?.state === 'completed', `result ${task.kind} ${task.status?.state}, want a completed task`);
  const part = task.artifacts?.[0]?.parts?.[0];
  assert(task.artifacts[0].name === 'context_pack' && part?.kind === 'data', `artifact ${JSON.stringify(task.artifacts?.[0]?.name)} part ${part?.kind}`);
  assert(Array.isArray(part.data.results), 'the pack has no results array');
  return part.data;
}

const client = await new ClientFactory().createFromUrl(url);
let task;

await check('0.3 card: streaming, bearer', async () => {
  const card = await client.getAgentCard();
  assert(card.protocolVersion?.startsWith('0.3'), `protocolVersion ${card.protocolVersion}`);
  assert(card.capabilities?.streaming === true, 'capabilities.streaming is not true');
  assert(card.securitySchemes?.bearer?.type === 'http', `security scheme ${JSON.stringify(card.securitySchemes)}`);
});

await check('message/send answers a completed task with the pack', async () => {
  task = await client.sendMessage(textMessage('login selector test failures'), key);
  packOf(task);
});

await check('tasks/get returns the task', async () => {
  const got = await client.getTask({ id: task.id }, key);
  assert(got.id === task.id, `got ${got.id}`);
  packOf(got);
});

await check('message/stream streams the task, its artifact and its final status', async () => {
  const kinds = [];
  let final;
  for await (const ev of client.sendMessageStream(textMessage('checkout intermittently'), key)) {
    kinds.push(ev.kind);
    if (ev.kind === 'status-update') final = ev;
  }
  assert(kinds.join(',') === 'task,artifact-update,status-update', `events ${kinds}`);
  assert(final.final === true && final.status.state === 'completed', `final ${JSON.stringify(final?.status)}`);
});

await check('tasks/cancel of an ended task: not cancelable (-32002)', async () => {
  await rejects(client.cancelTask({ id: task.id }, key), -32002, 'cancel');
});

await check('another key: tasks/get is not found (-32001)', async () => {
  await rejects(client.getTask({ id: task.id }, other), -32001, 'get by another key');
});

await check('another key: tasks/cancel is not found (-32001)', async () => {
  await rejects(client.cancelTask({ id: task.id }, other), -32001, 'cancel by another key');
});

done('@a2a-js/sdk 0.3 (A2A 0.3)');
